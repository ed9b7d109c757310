"""Sends text to a running TF Serving model server and prints the answers, one text at a time.

    keras-bert client --model=bert_classifier --text="a great movie" --text="a dull movie"
    keras-bert client --model=bert_squad --input=question="Who built it?" --input=context="Steve built it." \\
        --protocol=grpc

The inputs are named as the model's signature names them: --text / --text_b (every raw-text signature), or
--input=NAME=TEXT for any input (a span labeler's `question` and `context`).

REST (port 8501) needs nothing beyond the standard library; gRPC (port 8500) needs `tensorflow-serving-api`.
Entities, span answers, labels, the chosen ending and sentence embeddings print as one line each; other
outputs (logits) as JSON; --raw prints the server's response as it came.
"""

import json
import urllib.error
import urllib.request

from absl import app, flags

from keras_bert.errors import UserInputError
from recipes import flags as shared_flags
from recipes import logs

FLAGS = flags.FLAGS
flags.DEFINE_string("host", "localhost", "Model server host.")
flags.DEFINE_integer("port", None, "Port; default 8501 for REST, 8500 for gRPC.")
flags.DEFINE_string("model", None, "Model name (as in the model config / MODEL_NAME).")
shared_flags.define_one("version", help="Model version; default: the server's latest.")
shared_flags.define("signature")
shared_flags.define_served_inputs()
flags.DEFINE_enum("protocol", "rest", ["rest", "grpc"], "REST :predict or gRPC PredictionService/Predict.")
flags.DEFINE_enum("rest_format", "instances", ["instances", "inputs"],
                  "Row (instances) or columnar (inputs).")
flags.DEFINE_float("timeout", 30.0, "Seconds to wait for the server.")
flags.DEFINE_bool("raw", False, "Print the response JSON instead of one readable block per text.")
shared_flags.required("model")
shared_flags.check("port", shared_flags.within(1, 65535))
shared_flags.check("timeout", shared_flags.above(0))


def example_lines(inputs, result):
    """Readable lines of each example: its inputs (`name: 'value'`), then its answer's lines (`describe`)."""
    lines = []
    for i, example in enumerate(per_example(result)):
        lines += [f"{name}: {values[i]!r}" for name, values in inputs.items()]
        lines += [f"  {line}" for line in describe(example)]
    return lines


def rest_body(inputs, signature, rest_format):
    """The JSON body of a REST :predict request, row or columnar."""
    if rest_format == "inputs":
        return {"signature_name": signature, "inputs": inputs}
    rows = [dict(zip(inputs, values, strict=True)) for values in zip(*inputs.values(), strict=True)]
    return {"signature_name": signature, "instances": rows}


def predict_rest(url, body, timeout):
    """The JSON answer of the model server at `url`; ConnectionError naming `url` when none answers there
    (an HTTP error, the server's own answer, is raised as it is)."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.load(response)
    except urllib.error.HTTPError:
        raise
    except urllib.error.URLError as e:
        raise _no_server(url, e.reason, "REST", "--rest_api_port") from None


def _no_server(where, reason, protocol, server_flag):
    return ConnectionError(f"no model server answers at {where} ({reason}): start TF Serving with its "
                           f"{protocol} port there (tensorflow_model_server {server_flag}=...), or pass its "
                           "--host and --port")


def predict_grpc(target, model, version, signature, inputs, timeout):
    """{output name: list} of the model server's gRPC Predict answer at `target`; ConnectionError naming it
    when none answers there, UserInputError with the server's own answer else, or without
    tensorflow-serving-api."""
    try:
        import grpc
        from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc
    except ModuleNotFoundError as e:
        raise UserInputError(f"--protocol=grpc needs the package tensorflow-serving-api ({e}): pip install "
                             "tensorflow-serving-api, or use --protocol=rest") from None
    import tensorflow as tf

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    request.model_spec.signature_name = signature
    if version is not None:
        request.model_spec.version.value = version
    for name, values in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(values, dtype=tf.string))
    try:
        with grpc.insecure_channel(target) as channel:
            response = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout)
    except grpc.RpcError as e:
        if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            raise _no_server(target, f"gRPC {e.code().name}", "gRPC", "--port") from None
        raise UserInputError(f"the model server at {target} answered gRPC {e.code().name}: "
                             f"{' '.join(str(e.details()).split())}") from None
    return {name: tf.make_ndarray(proto).tolist() for name, proto in response.outputs.items()}


def per_example(result):
    """A response (REST row or columnar body, or gRPC {name: list}) -> one {output name: value} per text."""
    if "predictions" in result:
        return [row if isinstance(row, dict) else {"output": row} for row in result["predictions"]]
    outputs = result.get("outputs", result)
    if not isinstance(outputs, dict):
        outputs = {"output": outputs}
    return [dict(zip(outputs, values, strict=True)) for values in zip(*outputs.values(), strict=True)]


def _str(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def describe(example):
    """Readable lines of one example's outputs: the finished answers first (each task's `describe`,
    `served.py` of its folder, `keras_bert.tasks.registry`), a class label, a sentence embedding, the rest as
    JSON."""
    from keras_bert.export.servability.answers import served_modules

    lines, shown = [], set()
    for module in served_modules():
        described = getattr(module, "describe", None) and module.describe(example)
        if described:
            lines.extend(described[0])
            shown.update(described[1])
    name = next((n for n in ("label", "label_id") if not isinstance(example.get(n, []), list)), None)
    if name is not None and "label_id" not in shown:  # a class, unless a task's answer showed it
        chosen, probabilities = example.get("label_id"), example.get("probabilities")
        p = (f" (p={probabilities[chosen]:.3f})" if isinstance(probabilities, list) and chosen is not None
             else "")
        lines.append(f"{name}: {_str(example[name])}{p}")
        shown.update(("label", "label_id", "probabilities", "logits"))
    if "sentence_embedding" in example:
        vector = example["sentence_embedding"]
        norm = sum(v * v for v in vector) ** 0.5
        lines.append(f"sentence_embedding: {len(vector)} values, norm {norm:.4f}, "
                     f"[{', '.join(f'{v:.4f}' for v in vector[:4])}, ...]")
        shown.add("sentence_embedding")
    rest = {k: v for k, v in example.items() if k not in shown}
    if rest:
        lines.append(json.dumps(rest, default=_str))
    return lines


def main(argv):
    del argv
    inputs = shared_flags.served_inputs()
    if not inputs:
        raise app.UsageError("pass at least one --text (or --input=NAME=TEXT, NAME an input of --signature)")
    if FLAGS.protocol == "grpc":
        target = f"{FLAGS.host}:{FLAGS.port or 8500}"
        result = predict_grpc(target, FLAGS.model, FLAGS.version, FLAGS.signature, inputs, FLAGS.timeout)
    else:
        version = f"/versions/{FLAGS.version}" if FLAGS.version is not None else ""
        url = f"http://{FLAGS.host}:{FLAGS.port or 8501}/v1/models/{FLAGS.model}{version}:predict"
        result = predict_rest(url, rest_body(inputs, FLAGS.signature, FLAGS.rest_format), FLAGS.timeout)
    if FLAGS.raw:
        print(json.dumps(result, indent=1, default=_str))
        return
    print("\n".join(example_lines(inputs, result)))


if __name__ == "__main__":
    logs.run(main)
