"""Paddle programs of the kinds people write, with random weights: two of
paddle.vision.models (ResNet-18, MobileNetV2) and a small Transformer
encoder classifier from paddle.nn, two training steps each (cross-entropy,
backward, an optimizer's step, clear_grad), then the models in evaluation
mode. Prints each loss's repr and a digest of every parameter's bits after
each step, the eval outputs' digests, and the random generators' states
(Paddle's, Python's, numpy's): a traced run must print the same bytes."""

import hashlib
import random
import sys

import numpy as np
import paddle

random.seed(0)
np.random.seed(0)


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:16]


class TextClassifier(paddle.nn.Layer):
    def __init__(self, vocab=50, d_model=32, classes=5):
        super().__init__()
        self.embed = paddle.nn.Embedding(vocab, d_model)
        layer = paddle.nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=64, dropout=0.1)
        self.encoder = paddle.nn.TransformerEncoder(layer, num_layers=2, norm=paddle.nn.LayerNorm(d_model))
        self.head = paddle.nn.Linear(d_model, classes)

    def forward(self, tokens):
        mask = paddle.triu(paddle.full([tokens.shape[1], tokens.shape[1]], float("-inf")), diagonal=1)
        h = self.encoder(self.embed(tokens), src_mask=mask)
        return self.head(h.mean(axis=1))


def image_batch():
    return paddle.randn([2, 3, 32, 32]), paddle.randint(0, 10, [2])


def text_batch():
    return paddle.randint(0, 50, [3, 7]), paddle.randint(0, 5, [3])


MODELS = [
    ("resnet18", lambda: paddle.vision.models.resnet18(num_classes=10), image_batch, "momentum"),
    ("mobilenet_v2", lambda: paddle.vision.models.mobilenet_v2(num_classes=10), image_batch, "adam"),
    ("transformer", TextClassifier, text_batch, "adamw"),
]


def optimizer(kind, params):
    if kind == "momentum":
        return paddle.optimizer.Momentum(learning_rate=0.01, momentum=0.9, parameters=params)
    if kind == "adam":
        return paddle.optimizer.Adam(learning_rate=1e-3, parameters=params)
    return paddle.optimizer.AdamW(learning_rate=1e-3, weight_decay=0.01, parameters=params)


for name, make, batch, kind in MODELS:
    paddle.seed(0)
    model = make()
    opt = optimizer(kind, model.parameters())
    for step in range(2):
        x, y = batch()
        loss = paddle.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        weights = b"".join(p.numpy().tobytes() for p in model.parameters())
        print(name, step, repr(float(loss)), digest(weights))
    model.eval()
    with paddle.no_grad():
        out = model(batch()[0])
    print(name, "eval", out.shape, out.dtype, digest(out.numpy().tobytes()))
print(paddle.to_tensor([1.5, 2.5]))
print("paddle rng", digest(paddle.randn([4]).numpy().tobytes()))  # the next draw of its generator
print("python rng", digest(repr(random.getstate()).encode()))
print("numpy rng", digest(repr(np.random.get_state()).encode()))
sys.stdout.flush()
