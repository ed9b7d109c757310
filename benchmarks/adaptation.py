"""Lean fine-tuning and serving on the MiniLM checkpoint and the default classification task, in one run:
full fine-tuning vs LoRA (dev accuracy, step time, peak RSS, trainable parameters), then the fully
fine-tuned model exported in each served form (float32, bfloat16, Keras's own int8, int8_weights in float32
and bfloat16, int8_matmul with per-row and with static input ranges calibrated on the training texts): dev
accuracy as served, SavedModel size, raw-text serving latency at batch 1, 8 and 32, the forms interleaved.

    python -m benchmarks.adaptation                   # all of it (~15 minutes on 2 cores)
    python -m benchmarks.adaptation --run=serve --model_path=full.keras   # the exports of a saved model
    python -m benchmarks.adaptation --run=serve --model_path=full.keras --forms=fp32,int8_matmul,int8_static

Each fine-tuning runs in its own subprocess (peak RSS is that run's); the exports are timed in a third.
"""

import json
import os
import statistics
import tempfile

from benchmarks import common
from benchmarks.inputs import minilm_dir, read_task

SEQ_LENGTH = 48  # the task's sentences are short: 48 tokens hold most of them
BATCH_SIZE = 16
EPOCHS = 2
# Full fine-tuning: the paper's 5e-5. LoRA trains a few small matrices from zero: it needs a larger rate.
LEARNING_RATES = {0: 5e-5, 8: 1e-3}


def _preprocessor(path):
    from keras_bert.checkpoints import find_vocab_file
    from keras_bert.text import BertPreprocessor, BertTokenizer

    return BertPreprocessor(BertTokenizer(find_vocab_file(path), lower_case=True), SEQ_LENGTH)


def finetune(lora_rank, save_path):
    """Fine-tunes MiniLM + a classifier head on the default task; returns the figures and saves the model."""
    tf = common.configure_tensorflow()
    import keras

    from keras_bert.models.encoder import load_encoder
    from keras_bert.models.lora import count_parameters
    from keras_bert.tasks.classification.model import BertClassifier
    from keras_bert.training import create_optimizer

    keras.utils.set_random_seed(0)
    train_texts, train_labels, dev_texts, dev_labels, labels = read_task()
    model = BertClassifier(load_encoder(minilm_dir()), labels=labels,
                           preprocessor=_preprocessor(minilm_dir()))
    if lora_rank:
        model.enable_lora(lora_rank)
    steps = -(-len(train_texts) // BATCH_SIZE) * EPOCHS
    model.compile(optimizer=create_optimizer(LEARNING_RATES[lora_rank], steps, steps // 10), loss="auto",
                  metrics="auto")
    timer = common.epoch_timer()
    model.fit(train_texts, train_labels, batch_size=BATCH_SIZE, epochs=EPOCHS, callbacks=[timer], verbose=0)
    accuracy = model.evaluate(dev_texts, dev_labels, batch_size=64, return_dict=True, verbose=0)["accuracy"]
    model.save(save_path)
    del tf
    return {"lora_rank": lora_rank, "learning_rate": LEARNING_RATES[lora_rank],
            "trainable_params": count_parameters(model.trainable_weights),
            "total_params": count_parameters(model.weights),
            # The first epoch compiles; the later ones are the step time.
            "step_ms": round(1e3 * statistics.median(timer.times[1:])
                             / -(-len(train_texts) // BATCH_SIZE), 1),
            "dev_accuracy": round(float(accuracy), 4), "train_loss": round(timer.logs[-1]["loss"], 4)}


def _directory_mb(path):
    return round(sum(os.path.getsize(os.path.join(d, f))
                     for d, _, files in os.walk(path) for f in files) / 2**20, 1)


# The served forms compared: (quantize, dtype). "keras_int8" is Keras's own int8 Dense (per-row int8 inputs,
# TF's generic int8 matmul), what `quantize="int8"` exported before the forms of serving_form existed.
SERVED_FORMS = {"fp32": (None, "float32"), "bf16": (None, "bfloat16"), "keras_int8": ("keras", "float32"),
                "int8_weights": ("int8_weights", "float32"),
                "int8_weights_bf16": ("int8_weights", "bfloat16"),
                "int8_matmul": ("int8_matmul", "float32"), "int8_static": ("int8_matmul", "float32")}
# Forms exported with calibration_texts (the task's training texts): one constant range per Dense input.
CALIBRATED_FORMS = ("int8_static",)
LATENCY_BATCHES = (1, 8, 32)


def _keras_int8(model):
    """A copy of `model` whose Dense layers run Keras's own int8 call (input quantizer included)."""
    import keras

    from keras_bert import compat

    copy = type(model).from_config(model.get_config())
    copy.set_weights(model.get_weights())
    for layer in compat.sublayers(copy, include_self=False):
        if isinstance(layer, keras.layers.Dense):
            layer.quantize("int8")
    return copy


def serve(model_path, forms=tuple(SERVED_FORMS), repeats=20, seq_length=None):
    """Exports the saved model in each of `forms` (of SERVED_FORMS; "fp32" is always first); accuracy, size
    and latency as TF Serving's graph runs (latency at each of LATENCY_BATCHES, all forms interleaved).
    `seq_length`: serve at that sequence length (texts padded to it) instead of the model's own."""
    tf = common.configure_tensorflow()
    import keras
    import numpy as np

    from keras_bert.export import export_saved_model
    from keras_bert.text import BertPreprocessor

    model = keras.saving.load_model(model_path, compile=False)
    preprocessor = None if seq_length is None else BertPreprocessor(model.preprocessor.tokenizer, seq_length)
    train_texts, _, dev_texts, dev_labels, _ = read_task()
    dev_ids = np.array([model.labels.index(label) for label in dev_labels])
    results, servings, logits = {}, {}, {}
    with tempfile.TemporaryDirectory() as export_dir:
        for name in ["fp32"] + [form for form in forms if form != "fp32"]:
            quantize, dtype = SERVED_FORMS[name]
            source, quantize = (_keras_int8(model), None) if quantize == "keras" else (model, quantize)
            version_dir = export_saved_model(source, os.path.join(export_dir, name), preprocessor,
                                             signature="text", warmup=False, quantize=quantize, dtype=dtype,
                                             calibration_texts=(train_texts if name in CALIBRATED_FORMS
                                                                else None))
            servings[name] = tf.saved_model.load(version_dir).signatures["serving_default"]
            logits[name] = np.concatenate(
                [servings[name](text=tf.constant(dev_texts[i:i + 64]))["logits"].numpy()
                 for i in range(0, len(dev_texts), 64)])
            results[name] = {
                "dev_accuracy": round(float(np.mean(np.argmax(logits[name], -1) == dev_ids)), 4),
                "size_mb": _directory_mb(version_dir),
                "max_abs_logit_diff": round(float(np.abs(logits[name] - logits["fp32"]).max()), 4),
            }
        for batch, latency in common.text_latencies_ms(servings, dev_texts, LATENCY_BATCHES, repeats).items():
            for name, ms in latency.items():
                results[name][f"latency_b{batch}_ms"] = ms
                results[name][f"speedup_b{batch}"] = round(latency["fp32"] / ms, 2)
    results["load_average"] = os.getloadavg()
    return results


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--run", choices=["all", "finetune", "serve"], default="all")
    parser.add_argument("--lora_rank", type=int, default=0)
    parser.add_argument("--model_path", default=None)
    parser.add_argument("--forms", type=common.comma_separated(), default=list(SERVED_FORMS),
                        help="--run=serve: served forms, comma-separated")
    parser.add_argument("--seq_length", type=int, default=None,
                        help="--run=serve: serve at this sequence length (default: the model's, 48)")
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    if args.run == "finetune":
        common.emit(dict(kind="finetune", **finetune(args.lora_rank, args.model_path)))
        return
    if args.run == "serve":
        common.emit(dict(kind="serve", seq_length=args.seq_length or SEQ_LENGTH,
                         **serve(args.model_path, args.forms, seq_length=args.seq_length)))
        return
    results = {"machine": common.machine_description()}
    with tempfile.TemporaryDirectory() as work:
        full = os.path.join(work, "full.keras")
        results["full"] = common.run_subprocess("adaptation", ["--run=finetune", "--lora_rank=0",
                                                              f"--model_path={full}"], timeout=900)
        results["lora8"] = common.run_subprocess(
            "adaptation", ["--run=finetune", "--lora_rank=8",
                           f"--model_path={os.path.join(work, 'lora.keras')}"], timeout=900)
        results["serving"] = common.run_subprocess("adaptation", ["--run=serve", f"--model_path={full}"],
                                                   timeout=900)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
