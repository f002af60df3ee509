"""Held-out programs of the model families and tensor kinds the tests do not
tune on (bench/bench_fidelity.py --families): a mixture of experts, a
state-space model, an encoder-decoder, a convolutional vision model, a
speech model with a CTC loss; and programs of sparse, complex and FFT,
and quantized tensors. Each returns a zero-argument callable that runs one
training (or inference) step, built with random weights when it is made,
outside any tracing, as workloads.py's do. No test uses them: they check
that what the tests made pass was the class of a problem, not its case."""

from __future__ import annotations

import torch
import torch.nn as nn

from .workloads import _causal_lm_step, training_step


def qwen2_moe_training_step():
    """A one-layer Qwen2-MoE causal LM: 4 experts, 2 per token, a shared
    expert, the router's auxiliary loss; labels padded with -100."""
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    torch.manual_seed(0)
    config = Qwen2MoeConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        moe_intermediate_size=16,
        shared_expert_intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_experts=4,
        num_experts_per_tok=2,
        max_position_embeddings=32,
        output_router_logits=True,
    )
    return _causal_lm_step(Qwen2MoeForCausalLM(config), config.vocab_size)


def mamba2_training_step():
    """A one-layer Mamba-2 causal LM (its chunked scan in torch: cumsum,
    segment sums, exp of masks), labels padded with -100."""
    from transformers import Mamba2Config, Mamba2ForCausalLM

    torch.manual_seed(0)
    config = Mamba2Config(
        vocab_size=64,
        hidden_size=32,
        state_size=8,
        num_heads=4,
        head_dim=16,
        n_groups=1,
        expand=2,
        num_hidden_layers=1,
        chunk_size=4,
        conv_kernel=4,
    )
    return _causal_lm_step(Mamba2ForCausalLM(config), config.vocab_size)


def bart_training_step():
    """A one-layer BART encoder-decoder (learned positions, labels padded
    with -100 and shifted into the decoder's inputs), an Adam step."""
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    config = BartConfig(
        vocab_size=64,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=32,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
    )
    model = BartForConditionalGeneration(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids, labels = torch.randint(3, 64, (2, 7)), torch.randint(3, 64, (2, 6))
    labels[0, -2:] = -100
    return training_step(model, optimizer, lambda: model(input_ids=ids, labels=labels).loss)


def convnext_training_step():
    """A two-stage ConvNeXt classifier (depthwise 7x7 convolutions, layer
    norms over channels last, layer scale, GELU), an AdamW step."""
    from transformers import ConvNextConfig, ConvNextForImageClassification

    torch.manual_seed(0)
    config = ConvNextConfig(
        num_channels=3,
        patch_size=2,
        num_stages=2,
        hidden_sizes=[16, 32],
        depths=[1, 1],
        drop_path_rate=0.0,
        num_labels=5,
        image_size=16,
    )
    model = ConvNextForImageClassification(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    pixels, labels = torch.randn(2, 3, 16, 16), torch.tensor([4, 1])
    return training_step(model, optimizer, lambda: model(pixel_values=pixels, labels=labels).loss)


def wav2vec2_ctc_training_step():
    """A small Wav2Vec2 with a CTC head on raw audio (strided 1-d
    convolutions, group norm, a convolutional position embedding, CTC loss
    over labels padded with -100), an SGD step."""
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    torch.manual_seed(0)
    config = Wav2Vec2Config(
        vocab_size=12,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=4,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        feat_proj_dropout=0.0,
        final_dropout=0.0,
        layerdrop=0.0,
        mask_time_prob=0.0,
        pad_token_id=0,
        ctc_loss_reduction="mean",
    )
    model = Wav2Vec2ForCTC(config)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    audio = torch.randn(2, 400)
    labels = torch.randint(1, 12, (2, 6))
    labels[1, -2:] = -100
    return training_step(model, optimizer, lambda: model(input_values=audio, labels=labels).loss)


def sparse_graph_training_step():
    """A two-layer graph convolution: a normalized sparse COO adjacency
    matrix built from edges (torch.sparse_coo_tensor, coalesce), sparse
    by dense products (torch.sparse.mm), a cross-entropy over the nodes."""
    torch.manual_seed(0)
    nodes, features, classes = 12, 8, 3
    edges = torch.randint(0, nodes, (2, 30))
    edges = torch.cat([edges, torch.arange(nodes).repeat(2, 1)], dim=1)  # self loops
    weights = torch.ones(edges.shape[1])
    adjacency = torch.sparse_coo_tensor(edges, weights, (nodes, nodes)).coalesce()
    degree = torch.sparse.sum(adjacency, dim=1).to_dense()
    norm = degree.pow(-0.5)
    i = adjacency.indices()
    adjacency = torch.sparse_coo_tensor(i, adjacency.values() * norm[i[0]] * norm[i[1]], (nodes, nodes))
    first, second = nn.Linear(features, 16), nn.Linear(16, classes)
    model = nn.ModuleList([first, second])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, labels = torch.randn(nodes, features), torch.randint(0, classes, (nodes,))

    def loss():
        hidden = torch.relu(torch.sparse.mm(adjacency, first(x)))
        return nn.functional.cross_entropy(torch.sparse.mm(adjacency, second(hidden)), labels)

    return training_step(model, optimizer, loss)


def spectrogram_training_step():
    """A spectrogram classifier: a Hann-windowed STFT (complex), its
    magnitude in decibels, a complex filter applied by rfft/irfft, a
    convolution and a linear head, an Adam step."""
    torch.manual_seed(0)
    conv, head = nn.Conv2d(1, 4, 3, padding=1), nn.Linear(4, 3)
    model = nn.ModuleList([conv, head])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    signal, labels = torch.randn(2, 256), torch.tensor([0, 2])
    window = torch.hann_window(64)
    response = torch.polar(torch.ones(129), torch.linspace(0, 3.14, 129))

    def loss():
        smoothed = torch.fft.irfft(torch.fft.rfft(signal) * response, n=256)
        spec = torch.stft(smoothed, n_fft=64, hop_length=16, window=window, return_complex=True)
        power = 10 * torch.log10(spec.abs().pow(2) + 1e-6)
        features = conv(power.unsqueeze(1)).mean(dim=(2, 3))
        return nn.functional.cross_entropy(head(features), labels)

    return training_step(model, optimizer, loss)


def quantized_inference_step():
    """A dynamically quantized MLP (int8 weights, torch.ao's quantize_dynamic)
    and a statically quantized tensor's arithmetic: inference, no grad."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).eval()
    quantized = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    x = torch.randn(3, 16)

    def step():
        with torch.no_grad():
            out = quantized(x)
            q = torch.quantize_per_tensor(out, scale=0.05, zero_point=3, dtype=torch.quint8)
            return torch.dequantize(q).sum()

    step.model = quantized
    return step


FAMILIES = {
    "qwen2_moe": qwen2_moe_training_step,
    "mamba2": mamba2_training_step,
    "bart": bart_training_step,
    "convnext": convnext_training_step,
    "wav2vec2_ctc": wav2vec2_ctc_training_step,
    "sparse_graph": sparse_graph_training_step,
    "spectrogram": spectrogram_training_step,
    "quantized": quantized_inference_step,
}
