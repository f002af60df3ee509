"""More Paddle programs of the kinds people write, each small (random
weights, made-up data, seconds on a CPU), for the promise that a traced run
prints, saves and draws random numbers exactly as an untraced one:

  cnn        SqueezeNet 1.0 of paddle.vision.models (its dropout) fed by a
             shuffling paddle.io.DataLoader over a paddle.io.Dataset that
             flips images at random (Python's generator, drawn in the
             thread in which Paddle's single-process DataLoader reads
             ahead), Momentum with weight decay and a StepDecay schedule
  seq2seq    paddle.nn.Transformer (encoder and decoder) with embeddings,
             one training step (label smoothing), then a greedy decode loop
  tagger     an Embedding with a padding index, a bidirectional LSTM and a
             GRU over padded sequences (sequence_length), per-token
             cross-entropy that ignores the padding, Adam with gradient
             clipping by global norm
  amp        paddle.amp.auto_cast (bfloat16, level O1) and a GradScaler
             (on a CPU both leave the computation float32, and warn), and
             bfloat16 tensors Paddle's CPU kernels do take (casts, scale,
             multiply) saved beside the model
  to_static  a Layer converted by paddle.jit.to_static (full_graph: the AST
             transcription) trained two steps, a function converted by the
             default (SOT) transcription, and paddle.jit.save's files

Each prints the losses' reprs, digests of every parameter's bits (and of
the parameters' names: Paddle's generator of unique names must not move),
of its outputs, of the file it saved with paddle.save, and of each random
generator's state (Paddle's, Python's, numpy's).

    python paddle_programs_more.py PROGRAM SAVE_DIR untraced
    python paddle_programs_more.py PROGRAM SAVE_DIR before|inside LEVELS merge|split TRACE_DIR

"before": the program builds its model, then starts
APITracer(dialect="paddle", output_path=TRACE_DIR, levels=LEVELS,
merge_output=...); "inside": the tracer starts first, the model is built
while it traces. LEVELS: comma-separated ("0,1,2"). The tracer stops once
the program has printed its last line."""

import hashlib
import os
import random
import sys

import numpy as np
import paddle


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:16]


def weights(model) -> str:
    return digest(b"".join(p.numpy().tobytes() for p in model.parameters()))


def names(model) -> str:
    return digest(" ".join(p.name for p in model.parameters()).encode())


def report_saved(path: str) -> None:
    with open(path, "rb") as f:
        print("saved", os.path.basename(path), digest(f.read()))


def report_state() -> None:
    # the generator's state as it writes itself (less an address), then its next draw
    state = " ".join(word for word in str(paddle.get_rng_state()[0]).split() if not word.startswith("0x"))
    print("paddle rng", digest(state.encode()), digest(paddle.randn([4]).numpy().tobytes()))
    print("python rng", digest(repr(random.getstate()).encode()))
    print("numpy rng", digest(repr(np.random.get_state()).encode()))


class Tracing:
    """Starts the tracer at the point the command line names, or never."""

    def __init__(self, argv: list) -> None:
        self.mode = argv[0]
        if self.mode not in ("untraced", "before", "inside"):
            raise SystemExit(f"mode: untraced, before or inside, not {self.mode!r}")
        self.tracer = None
        if self.mode != "untraced":
            self.levels = [int(n) for n in argv[1].split(",")]
            self.merge = {"merge": True, "split": False}[argv[2]]
            self.output = argv[3]

    def at(self, point: str) -> None:
        if point == self.mode:
            from api_tracer import APITracer

            self.tracer = APITracer(
                dialect="paddle", output_path=self.output, levels=self.levels, merge_output=self.merge
            ).start()

    def stop(self) -> None:
        if self.tracer is not None:
            self.tracer.stop()


# -- cnn: a vision model, a Dataset, a shuffling DataLoader, dropout ----------------------------


class Shapes(paddle.io.Dataset):
    """Made-up images: noise with a bright square where the label says,
    flipped at random as they are read."""

    def __init__(self, n: int) -> None:
        rng = np.random.RandomState(1)
        self.images = rng.standard_normal((n, 3, 48, 48)).astype("float32")
        self.labels = rng.randint(0, 4, n).astype("int64")
        for image, label in zip(self.images, self.labels):
            row, col = divmod(int(label), 2)
            image[:, row * 24 : row * 24 + 12, col * 24 : col * 24 + 12] += 2.0

    def __getitem__(self, i: int):
        image = self.images[i]
        if random.random() < 0.5:  # augmentation, drawn from Python's generator
            image = image[:, :, ::-1].copy()
        return image, self.labels[i]

    def __len__(self) -> int:
        return len(self.labels)


def cnn(tracing: Tracing, save_dir: str) -> None:
    tracing.at("inside")
    model = paddle.vision.models.squeezenet1_0(num_classes=4)
    schedule = paddle.optimizer.lr.StepDecay(learning_rate=0.01, step_size=2, gamma=0.5)
    opt = paddle.optimizer.Momentum(
        learning_rate=schedule, momentum=0.9, parameters=model.parameters(), weight_decay=1e-4
    )
    tracing.at("before")
    print("cnn params", names(model), weights(model))
    loader = paddle.io.DataLoader(Shapes(16), batch_size=4, shuffle=True, drop_last=True)
    model.train()
    for step, (x, y) in enumerate(loader):
        loss = paddle.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        schedule.step()
        print("cnn step", step, repr(float(loss)), repr(schedule.get_lr()), weights(model))
    model.eval()
    with paddle.no_grad():
        out = model(paddle.to_tensor(Shapes(4).images))
    print("cnn eval", out.shape, digest(out.numpy().tobytes()), out.argmax(axis=1).tolist())
    path = os.path.join(save_dir, "cnn.pdparams")
    paddle.save(model.state_dict(), path)
    paddle.save(opt.state_dict(), os.path.join(save_dir, "cnn.pdopt"))
    report_saved(path)


# -- seq2seq: paddle.nn.Transformer, a training step, greedy decoding --------------------------

BOS, EOS, VOCAB = 1, 2, 20


class Seq2Seq(paddle.nn.Layer):
    def __init__(self, d_model: int = 16) -> None:
        super().__init__()
        self.src_embed = paddle.nn.Embedding(VOCAB, d_model)
        self.tgt_embed = paddle.nn.Embedding(VOCAB, d_model)
        self.transformer = paddle.nn.Transformer(
            d_model, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32, dropout=0.1
        )
        self.out = paddle.nn.Linear(d_model, VOCAB)

    def forward(self, src, tgt):
        mask = self.transformer.generate_square_subsequent_mask(tgt.shape[1])
        h = self.transformer(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=mask)
        return self.out(h)

    def greedy(self, src, steps: int):
        memory = self.transformer.encoder(self.src_embed(src))
        tokens = paddle.full([src.shape[0], 1], BOS, dtype="int64")
        for _ in range(steps):
            mask = self.transformer.generate_square_subsequent_mask(tokens.shape[1])
            h = self.transformer.decoder(self.tgt_embed(tokens), memory, tgt_mask=mask)
            next_token = self.out(h[:, -1]).argmax(axis=-1, keepdim=True)
            tokens = paddle.concat([tokens, next_token], axis=1)
        return tokens


def seq2seq(tracing: Tracing, save_dir: str) -> None:
    tracing.at("inside")
    model = Seq2Seq()
    opt = paddle.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters(), weight_decay=0.01)
    tracing.at("before")
    print("seq2seq params", names(model), weights(model))
    src = paddle.randint(3, VOCAB, [3, 6])
    tgt = paddle.concat([paddle.full([3, 1], BOS, dtype="int64"), paddle.flip(src, axis=[1])], axis=1)
    for step in range(2):
        logits = model(src, tgt[:, :-1])
        labels = paddle.nn.functional.one_hot(tgt[:, 1:], VOCAB)
        smooth = paddle.nn.functional.label_smooth(labels, epsilon=0.1)
        loss = paddle.nn.functional.cross_entropy(logits, smooth, soft_label=True)
        loss.backward()
        opt.step()
        opt.clear_grad()
        print("seq2seq step", step, repr(float(loss)), weights(model))
    model.eval()
    with paddle.no_grad():
        decoded = model.greedy(src, steps=5)
    print("seq2seq decoded", decoded.tolist())
    path = os.path.join(save_dir, "seq2seq.pdparams")
    paddle.save(model.state_dict(), path)
    report_saved(path)


# -- tagger: embeddings, bidirectional LSTM and GRU, per-token loss ignoring padding -----------

PAD, IGNORE = 0, -1


class Tagger(paddle.nn.Layer):
    def __init__(self, vocab: int = 30, tags: int = 5, dim: int = 12) -> None:
        super().__init__()
        self.embed = paddle.nn.Embedding(vocab, dim, padding_idx=PAD)
        self.lstm = paddle.nn.LSTM(dim, dim, direction="bidirect")
        self.gru = paddle.nn.GRU(2 * dim, dim, direction="bidirect")
        self.drop = paddle.nn.Dropout(0.2)
        self.head = paddle.nn.Linear(2 * dim, tags)

    def forward(self, tokens, lengths):
        h, _ = self.lstm(self.embed(tokens), sequence_length=lengths)
        h, _ = self.gru(self.drop(h), sequence_length=lengths)
        return self.head(h)


def tagged_batch():
    lengths = [7, 5, 3, 6]
    tokens = np.zeros((4, 7), dtype="int64")
    tags = np.full((4, 7), IGNORE, dtype="int64")
    for i, n in enumerate(lengths):
        tokens[i, :n] = np.random.randint(1, 30, n)
        tags[i, :n] = tokens[i, :n] % 5
    return paddle.to_tensor(tokens), paddle.to_tensor(tags), paddle.to_tensor(lengths, dtype="int64")


def tagger(tracing: Tracing, save_dir: str) -> None:
    tracing.at("inside")
    model = Tagger()
    opt = paddle.optimizer.Adam(
        learning_rate=5e-3, parameters=model.parameters(), grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0)
    )
    tracing.at("before")
    print("tagger params", names(model), weights(model))
    for step in range(3):
        tokens, tags, lengths = tagged_batch()
        logits = model(tokens, lengths)
        loss = paddle.nn.functional.cross_entropy(logits, tags.unsqueeze(-1), ignore_index=IGNORE)
        loss.backward()
        opt.step()
        opt.clear_grad()
        print("tagger step", step, repr(float(loss)), weights(model))
    model.eval()
    tokens, tags, lengths = tagged_batch()
    with paddle.no_grad():
        predicted = model(tokens, lengths).argmax(axis=-1)
    real = tags != IGNORE
    correct = paddle.logical_and(predicted == tags, real).astype("int64").sum()
    print("tagger eval", int(correct), "of", int(real.astype("int64").sum()), predicted.tolist())
    path = os.path.join(save_dir, "tagger.pdparams")
    paddle.save(model.state_dict(), path)
    report_saved(path)


# -- amp: auto_cast and a GradScaler (float32 on a CPU), bfloat16 tensors ----------------------


class SmallConv(paddle.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.conv = paddle.nn.Conv2D(1, 6, 3, padding=1)
        self.bn = paddle.nn.BatchNorm2D(6)
        self.fc = paddle.nn.Linear(6 * 4 * 4, 3)

    def forward(self, x):
        h = paddle.nn.functional.max_pool2d(paddle.nn.functional.relu(self.bn(self.conv(x))), 2)
        return self.fc(paddle.flatten(h, 1))


def amp(tracing: Tracing, save_dir: str) -> None:
    tracing.at("inside")
    model = SmallConv()
    opt = paddle.optimizer.SGD(learning_rate=0.05, parameters=model.parameters())
    scaler = paddle.amp.GradScaler(init_loss_scaling=1024.0, incr_every_n_steps=2)
    tracing.at("before")
    print("amp params", names(model), weights(model))
    for step in range(3):
        x, y = paddle.randn([4, 1, 8, 8]), paddle.randint(0, 3, [4])
        with paddle.amp.auto_cast(dtype="bfloat16", level="O1"):
            logits = model(x)
            loss = paddle.nn.functional.cross_entropy(logits, y)
        scaled = scaler.scale(loss)
        scaled.backward()
        scaler.minimize(opt, scaled)
        opt.clear_grad()
        print("amp step", step, logits.dtype, repr(float(loss)), repr(float(scaled)), weights(model))
    # bfloat16 where Paddle's CPU kernels take it: a cast, scale, multiply, sum
    half = model.fc.weight.astype("bfloat16")
    product = paddle.multiply(paddle.scale(half, 0.5), half)
    print("amp bfloat16", product.dtype, digest(product.astype("float32").numpy().tobytes()))
    print("amp bfloat16 sum", repr(float(product.sum().astype("float32"))))
    path = os.path.join(save_dir, "amp.pdparams")
    paddle.save({"model": model.state_dict(), "fc_bf16": half, "scaler": scaler.state_dict()}, path)
    report_saved(path)


# -- to_static: paddle.jit.to_static (AST and SOT), paddle.jit.save ----------------------------


class Gated(paddle.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.a = paddle.nn.Linear(8, 16)
        self.b = paddle.nn.Linear(8, 16)
        self.out = paddle.nn.Linear(16, 2)

    def forward(self, x):
        gate = paddle.nn.functional.sigmoid(self.b(x))
        h = paddle.where(gate > 0.5, paddle.tanh(self.a(x)), paddle.nn.functional.relu(self.a(x)))
        return self.out(h * gate)


@paddle.jit.to_static
def normalized(x):
    return (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-5)


def to_static(tracing: Tracing, save_dir: str) -> None:
    tracing.at("inside")
    model = paddle.jit.to_static(Gated(), full_graph=True)
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    tracing.at("before")
    print("to_static params", names(model), weights(model))
    data = paddle.randn([6, 8])
    labels = paddle.randint(0, 2, [6])
    for step in range(2):
        loss = paddle.nn.functional.cross_entropy(model(normalized(data)), labels)
        loss.backward()
        opt.step()
        opt.clear_grad()
        print("to_static step", step, repr(float(loss)), weights(model))
    model.eval()
    out = model(normalized(data))
    print("to_static eval", digest(out.numpy().tobytes()))
    path = os.path.join(save_dir, "to_static.pdparams")
    paddle.save(model.state_dict(), path)
    report_saved(path)
    prefix = os.path.join(save_dir, "inference", "gated")
    paddle.jit.save(model, prefix, input_spec=[paddle.static.InputSpec([None, 8], "float32")])
    loaded = paddle.jit.load(prefix)
    loaded.eval()
    print("to_static loaded agrees", bool(paddle.equal_all(loaded(data), model(data))))
    report_saved(prefix + ".pdiparams")


PROGRAMS = {"cnn": cnn, "seq2seq": seq2seq, "tagger": tagger, "amp": amp, "to_static": to_static}

if __name__ == "__main__":
    program, save_dir = sys.argv[1], sys.argv[2]
    tracing = Tracing(sys.argv[3:])
    random.seed(0)
    np.random.seed(0)
    paddle.seed(0)
    PROGRAMS[program](tracing, save_dir)
    print(paddle.to_tensor([1.5, 2.5]))
    report_state()
    sys.stdout.flush()
    tracing.stop()
