"""Pre-training throughput (tokens/s) for MLM + NSP at seq 128, and model-FLOP utilization.

One configuration per process (see benchmarks/common.py):

  python -m benchmarks.pretrain_throughput --impl=ours --size=mini --dtype=float32
  python -m benchmarks.pretrain_throughput --impl=kerashub --size=mini      # BertMaskedLM: MLM only, no NSP
  python -m benchmarks.pretrain_throughput --impl=transformers --size=mini  # BertForPreTraining, torch CPU
  python -m benchmarks.pretrain_throughput --impl=peak --dtype=bfloat16     # the matmul peak, GFLOP/s
  python -m benchmarks.pretrain_throughput --impl=floor --dtype=mixed_bfloat16  # a step's matmuls alone
  python -m benchmarks.pretrain_throughput --impl=loss_curve --dtype=mixed_bfloat16
  python -m benchmarks.pretrain_throughput --impl=ours --data=corpus --steps=24 --pad_to_multiple_of=32

"ours" is the real `BertPretrainer.fit` (the library's AdamW with clipping; the train step XLA-compiled or
not, as `--jit_compile` says, by default as the library chooses for the dtype on this machine) on a repeated
in-memory batch: epoch 1 (compiles) is warm-up, then `--epochs` epochs are timed (median and spread).
tokens/s counts every position of every sequence (batch * seq per step). With --data=corpus the batches are
real ones streamed from the default corpus (about a quarter of their positions are padding) and tokens/s
counts real tokens only, so cutting padding (--pad_to_multiple_of) shows as a gain; implementations that
compute every position run at the same step time as on the synthetic batch. Model FLOPs per token
(`train_flops_per_token`) are the same for all three implementations, whatever each actually computes
(transformers runs its MLM head on all 128 positions).
"""

import statistics
import time

from benchmarks import common, inputs


def non_embedding_params(layers, hidden, intermediate):
    """Matmul weights of the transformer stack (biases and LayerNorms are not matmul FLOPs)."""
    return layers * (4 * hidden * hidden + 2 * hidden * intermediate)


def train_flops_per_token(size, seq_length=common.SEQ_LENGTH, predictions=common.MAX_PREDICTIONS,
                          vocab_size=common.VOCAB_SIZE):
    """Training (forward + backward = 3 x forward) FLOPs per token:

        6 * N                                     N = non-embedding matmul params = L * (4h^2 + 2hi)
      + 12 * L * seq * h                          QK^T and probs.V: 2 * 2 * seq * h per token forward
      + (predictions / seq) * 6 * (h^2 + h * V)   MLM transform + tied output matmul, masked positions only
    The pooler and NSP head (per sequence, not per token) and embedding lookups are left out.
    """
    layers, hidden, _, intermediate = common.SIZES[size]
    dense = 6 * non_embedding_params(layers, hidden, intermediate)
    attention = 12 * layers * seq_length * hidden
    mlm = predictions / seq_length * 6 * (hidden * hidden + hidden * vocab_size)
    return dense + attention + mlm


def measure_peak(dtype, n=2048, repeats=8):
    """Best GFLOP/s of an n x n x n matmul in `dtype`, over XLA and TF's own kernels."""
    tf = common.configure_tensorflow()
    a = tf.random.normal((n, n), dtype="float32")
    b = tf.random.normal((n, n), dtype="float32")
    a, b = tf.cast(a, dtype), tf.cast(b, dtype)
    results = {}
    for name, fn in (("xla", tf.function(tf.matmul, jit_compile=True)), ("tf", tf.function(tf.matmul))):
        fn(a, b).numpy()
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            fn(a, b).numpy()
            best = min(best, time.perf_counter() - start)
        results[name] = 2 * n**3 / best / 1e9
    return {"gflops": round(max(results.values()), 1),
            "by_kernel": {k: round(v, 1) for k, v in results.items()}}


def step_matmuls(size, batch_size, seq_length=common.SEQ_LENGTH, predictions=common.MAX_PREDICTIONS,
                 vocab_size=common.VOCAB_SIZE):
    """{name: (count, batch dims, m, k, n)} of the products one MLM + NSP train step computes: each dense
    and attention product of the forward pass and its two gradients (dX = dY W^T, dW = X^T dY) as the three
    [m, k] x [k, n] products they are. The pooler and NSP head (one row per sequence) are left out."""
    layers, hidden, heads, intermediate = common.SIZES[size]
    tokens, masked, rows = batch_size * seq_length, batch_size * predictions, batch_size * heads
    head = hidden // heads
    forward = {"qkv": ((), tokens, hidden, 3 * hidden), "attention_output": ((), tokens, hidden, hidden),
               "intermediate": ((), tokens, hidden, intermediate),
               "output": ((), tokens, intermediate, hidden),
               "scores": ((rows,), seq_length, head, seq_length),
               "context": ((rows,), seq_length, seq_length, head)}
    mlm = {"mlm_transform": ((), masked, hidden, hidden), "mlm_output": ((), masked, hidden, vocab_size)}
    products = {}
    for name, (batch, m, k, n) in list(forward.items()) + list(mlm.items()):
        count = layers if name in forward else 1
        products[name] = (count, batch, m, k, n)
        products[name + " dX"] = (count, batch, m, n, k)
        products[name + " dW"] = (count, batch, k, m, n)
    return products


def measure_floor(size, dtype, batch_size, repeats=20):
    """Milliseconds a train step's matmuls take alone on TF's kernels (the ones the library's steps run
    them on): each product of `step_matmuls` timed on its own (`common.median_latency` of `repeats` calls)
    times its count. No step that computes these products runs faster than their sum."""
    tf = common.configure_tensorflow()
    compute = "bfloat16" if "bfloat16" in dtype else "float32"
    by_product = {}
    for name, (count, batch, m, k, n) in step_matmuls(size, batch_size).items():
        a = tf.cast(tf.random.normal((*batch, m, k)), compute)
        b = tf.cast(tf.random.normal((*batch, k, n)), compute)
        product = tf.function(tf.matmul)
        seconds = common.median_latency(lambda f=product, a=a, b=b: f(a, b).numpy(), repeats)
        flops = 2 * m * k * n * (batch[0] if batch else 1)
        by_product[name] = {"ms": round(1e3 * count * seconds, 2), "gflops": round(flops / seconds / 1e9, 1)}
    total_ms = sum(entry["ms"] for entry in by_product.values())
    return {"floor_step_ms": round(total_ms, 1),
            "floor_tokens_per_s": round(batch_size * common.SEQ_LENGTH / total_ms * 1e3, 1),
            "by_product": by_product}


def _layers(size):
    layers, hidden, heads, intermediate = common.SIZES[size]
    return dict(layers=layers, hidden=hidden, heads=heads, intermediate=intermediate)


def build_ours(size, dtype, learning_rate=1e-4, jit_compile="auto"):
    import keras

    from keras_bert.config import BertConfig
    from keras_bert.models.encoder import BertEncoder
    from keras_bert.tasks.pretraining.model import BertPretrainer
    from keras_bert.training.optimization import create_optimizer

    keras.mixed_precision.set_global_policy(dtype)
    keras.utils.set_random_seed(0)
    s = _layers(size)
    config = BertConfig(vocab_size=common.VOCAB_SIZE, hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                        num_attention_heads=s["heads"], intermediate_size=s["intermediate"])
    model = BertPretrainer(BertEncoder(config, dtype=dtype))
    model.compile(optimizer=create_optimizer(learning_rate, num_train_steps=10_000, num_warmup_steps=0),
                  jit_compile=jit_compile)
    return model


def corpus_batches(batch_size, count, pad_to_multiple_of=0):
    """`count` real pre-training batches (seq 128, 20 predictions) streamed from the default corpus with the
    standard 30,522-token uncased vocab; with `pad_to_multiple_of`, grouped by length and cut to it."""
    from keras_bert.data import pretraining
    from keras_bert.data.default_corpus import default_corpus_path
    from keras_bert.text import BertTokenizer

    tokenizer = BertTokenizer(inputs.vocab_file())
    corpus = [default_corpus_path()]
    config = pretraining.PretrainingDataConfig(common.SEQ_LENGTH, common.MAX_PREDICTIONS, seed=0)
    dataset = pretraining.text_dataset(lambda: pretraining.read_documents(corpus), tokenizer, config,
                                       batch_size, pad_to_multiple_of=pad_to_multiple_of)
    return [{k: (v[:, None] if k == "next_sentence_labels" else v) for k, v in batch.items()}
            for batch in dataset.take(count).as_numpy_iterator()]


def run_ours(size, dtype, batches, steps, epochs, jit_compile, **fit_options):
    tf = common.configure_tensorflow()
    return common.fit_timed(build_ours(size, dtype, jit_compile=jit_compile), tf, batches, steps,
                            timed_epochs=epochs, **fit_options)


def run_kerashub(size, dtype, batches, steps, epochs, jit_compile, **fit_options):
    tf = common.configure_tensorflow()
    import keras
    import keras_hub

    keras.mixed_precision.set_global_policy(dtype)
    keras.utils.set_random_seed(0)
    s = _layers(size)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=common.VOCAB_SIZE, num_layers=s["layers"], num_heads=s["heads"],
        hidden_dim=s["hidden"], intermediate_dim=s["intermediate"], max_sequence_length=512, dtype=dtype)
    model = keras_hub.models.BertMaskedLM(backbone=backbone, preprocessor=None)
    model.compile(optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()],
                  jit_compile=jit_compile is not False)  # XLA unless --jit_compile=false

    def to_inputs(b):
        x = {"token_ids": b["input_word_ids"], "segment_ids": b["input_type_ids"],
             "padding_mask": b["input_mask"].astype(bool), "mask_positions": b["masked_lm_positions"]}
        return x, b["masked_lm_ids"], b["masked_lm_weights"]

    return common.fit_timed(model, tf, batches, steps, to_inputs, timed_epochs=epochs, **fit_options)


def run_transformers(size, dtype, batches, steps, epochs, jit_compile, **fit_options):
    torch = common.configure_torch()
    import transformers

    torch.manual_seed(0)
    s = _layers(size)
    config = transformers.BertConfig(
        vocab_size=common.VOCAB_SIZE, hidden_size=s["hidden"], num_hidden_layers=s["layers"],
        num_attention_heads=s["heads"], intermediate_size=s["intermediate"], hidden_act="gelu")
    model = transformers.BertForPreTraining(config)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6)
    if len(batches) > 1:
        raise ValueError("--impl=transformers runs on the synthetic batch only")
    b = {k: torch.from_numpy(v) for k, v in batches[0].items()}
    labels = torch.full_like(b["input_word_ids"], -100, dtype=torch.long)
    labels.scatter_(1, b["masked_lm_positions"].long(), b["masked_lm_ids"].long())
    inputs = dict(input_ids=b["input_word_ids"].long(), attention_mask=b["input_mask"].long(),
                  token_type_ids=b["input_type_ids"].long(), labels=labels,
                  next_sentence_label=b["next_sentence_labels"][:, 0].long())
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "mixed_bfloat16")

    def step():
        with autocast:
            loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(loss)

    for _ in range(steps):
        step()
    per_step, cpu_per_step, steals = [], [], []
    for _ in range(epochs):
        start, cpu_start, steal_start = time.perf_counter(), time.process_time(), common.steal_seconds()
        for _ in range(steps):
            loss = step()
        per_step.append((time.perf_counter() - start) / steps)
        cpu_per_step.append((time.process_time() - cpu_start) / steps)
        steals.append(common.steal_seconds() - steal_start)
    return statistics.median(per_step), loss, steps, (per_step, cpu_per_step, steals)


def run_loss_curve(dtype, steps, batch_size=16, learning_rate=1e-3):
    """Per-step total loss of `ours` (mini) over `steps` distinct synthetic batches, seeded the same in
    every dtype, so float32 and mixed_bfloat16 curves can be compared point by point."""
    tf = common.configure_tensorflow()
    import keras

    model = build_ours("mini", dtype, learning_rate=learning_rate)
    batches = [common.pretraining_batch(batch_size, seed=i) for i in range(steps)]
    # A learnable signal: the masked token is a function of its position (random ids carry none).
    for b in batches:
        b["masked_lm_ids"] = (b["masked_lm_positions"] % 50 + 1000).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices(
        {k: tf.stack([b[k] for b in batches]) for k in batches[0]})
    losses = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            losses.append(float(logs["loss"]))

    model.fit(dataset, epochs=1, callbacks=[Record()], verbose=0)
    return losses


RUNNERS = {"ours": run_ours, "kerashub": run_kerashub, "transformers": run_transformers}


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--impl", choices=sorted(RUNNERS) + ["peak", "loss_curve", "floor"], default="ours")
    parser.add_argument("--size", choices=sorted(common.SIZES), default="mini")
    parser.add_argument("--dtype", default="float32",
                        help="float32 | mixed_bfloat16 for models; float32 | bfloat16 for --impl=peak")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=4,
                        help="steps per epoch: one warm-up epoch, then --epochs")
    parser.add_argument("--epochs", type=int, default=5,
                        help="timed epochs; tokens/s is the median epoch's, the spread is max/min")
    parser.add_argument("--jit_compile", choices=["auto", "true", "false", "fusions"], default="auto",
                        help="ours: the train step's execution: true = XLA, false = TF's kernels, fusions = "
                             "TF's kernels for the matmuls and XLA for the ops between them; auto = the "
                             "library's choice for the dtype on this machine (keras_bert.execution)")
    parser.add_argument("--data", choices=["synthetic", "corpus"], default="synthetic",
                        help="one full-length synthetic batch, or --steps real batches of the default corpus "
                             "(tokens/s then counts real tokens, not padding)")
    parser.add_argument("--pad_to_multiple_of", type=int, default=0,
                        help="--data=corpus: group batches by length and cut their padding (ours only)")
    parser.add_argument("--fit_per_epoch", action="store_true",
                        help="each epoch its own fit() call, timed to its return (ours / kerashub)")
    parser.add_argument("--tf_data_autotune", choices=["default", "on", "off"], default="default",
                        help="the dataset's tf.data autotune option set explicitly; default: as fit leaves "
                             "it (keras_bert's models turn it off: keras_bert/data/options.py)")
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)

    if args.impl == "peak":
        common.emit(dict(kind="peak", dtype=args.dtype, **measure_peak(args.dtype)))
        return
    if args.impl == "floor":
        common.emit(dict(kind="floor", size=args.size, dtype=args.dtype, batch_size=args.batch_size,
                         **measure_floor(args.size, args.dtype, args.batch_size)))
        return
    if args.impl == "loss_curve":
        common.emit(dict(kind="loss_curve", dtype=args.dtype, losses=run_loss_curve(args.dtype, args.steps)))
        return
    if args.data == "corpus":
        common.configure_tensorflow()  # before the input pipeline runs TF
        batches = corpus_batches(args.batch_size, args.steps, args.pad_to_multiple_of)
    else:
        batches = [common.pretraining_batch(args.batch_size)]
    jit_compile = {"auto": "auto", "true": True, "false": False, "fusions": "fusions"}[args.jit_compile]
    library_choice = chosen = None
    if args.impl == "ours":
        from keras_bert.execution import choose_execution, resolve_execution

        common.configure_tensorflow()  # thread pools are set before TF initializes
        library_choice = choose_execution(args.dtype)  # what BertPretrainer.compile() picks here
        chosen = resolve_execution(jit_compile, args.dtype)
    fit_options = dict(fit_per_epoch=args.fit_per_epoch,
                       tf_data_autotune={"default": None, "on": True, "off": False}[args.tf_data_autotune])
    seconds, loss, steps, (per_step, cpu_per_step, steals) = RUNNERS[args.impl](
        args.size, args.dtype, batches, args.steps, args.epochs, jit_compile, **fit_options)
    # Tokens per step: every position of every row; with corpus data, the real (unpadded) tokens.
    tokens = (sum(int(b["input_mask"].sum()) for b in batches) / len(batches) if args.data == "corpus"
              else args.batch_size * common.SEQ_LENGTH)
    positions = sum(b["input_mask"].size for b in batches) / len(batches)
    tokens_per_s = tokens / seconds
    flops = train_flops_per_token(args.size)
    common.emit(dict(kind="pretrain", impl=args.impl, size=args.size, dtype=args.dtype, data=args.data,
                     pad_to_multiple_of=args.pad_to_multiple_of, steps=steps, jit_compile=args.jit_compile,
                     fit_per_epoch=args.fit_per_epoch, tf_data_autotune=args.tf_data_autotune,
                     execution=chosen, library_choice=chosen == library_choice,
                     epoch_step_s=[round(s, 4) for s in per_step],
                     spread=round(max(per_step) / min(per_step), 3),
                     epoch_cpu_s=[round(s, 4) for s in cpu_per_step],
                     epoch_steal_s=[round(s, 2) for s in steals],
                     real_fraction=round(tokens / (args.batch_size * common.SEQ_LENGTH), 4),
                     computed_fraction=round(positions / (args.batch_size * common.SEQ_LENGTH), 4),
                     step_s=round(seconds, 4), tokens_per_s=round(tokens_per_s, 1),
                     model_gflops=round(tokens_per_s * flops / 1e9, 2),
                     flops_per_token=flops, final_loss=round(loss, 4)))


if __name__ == "__main__":
    main()
