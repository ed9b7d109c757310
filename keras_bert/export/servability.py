"""Would the stock TF Serving model server load and run this SavedModel? Checked the way the server does it.

This module imports neither keras nor keras_bert nor TensorFlow's Python package: it talks to the C API of
the installed wheel (`libtensorflow_cc.so.2`) through ctypes, registers the tensorflow-text kernels with
`TF_LoadLibrary` (as the model server links them in), loads the export with the session-based
`TF_LoadSessionFromSavedModel` (the loader TF Serving uses, which fails on some Keras 3 exports that Python's
`tf.saved_model.load` accepts: "Could not find variable ..."), runs a signature on the given inputs, and lists
every op of the graph and its function library that TensorFlow core lacks, against the tensorflow-text ops
each TF Serving release links.

Run it in a fresh process (`export/check_servable.py`, or `check_servable_subprocess()` from the library):
for the proto definitions it installs a bare `tensorflow` package stub whose submodules are the wheel's
generated `*_pb2` files, which would shadow a later real `import tensorflow` in the same process.
"""

import ctypes
import glob
import importlib.util
import json
import os
import struct
import subprocess
import sys
import types

import numpy as np

# tensorflow-text version compiled into the `tensorflow/serving` model server, by Serving release
# (tensorflow_serving/workspace.bzl, `org_tensorflow_text`). Serving links all of tf-text's `ops_lib`.
SERVING_TF_TEXT_VERSION = {
    "2.2": "2.2.0",
    "2.8": "2.8.2",
    "2.12": "2.12.1",
    "2.20": "2.20.0",
}

# First TF Serving release known to register each tensorflow-text op (as named in the graph).
#  2.2:  the ops of Serving's own tf-text regression model (tensorflow/text oss_scripts/model_server).
#  2.12: ops present in tf-text 2.12.1, which Serving 2.12-2.19 embed (they may be older; not claimed).
#  2.20: ops added to tf-text after 2.12.1 (RoundRobinTrim: "Op type not registered" on Serving <= 2.19,
#        tensorflow/serving#2267 and #4057).
# An op outside TF core and outside this table is flagged: no Serving release is known to have it.
TF_TEXT_OP_FIRST_SERVING = {
    **dict.fromkeys([
        "CaseFoldUTF8", "NormalizeUTF8", "RegexSplitWithOffsets", "WordpieceTokenizeWithOffsets",
        "WhitespaceTokenizeWithOffsets", "UnicodeScriptTokenizeWithOffsets", "SplitMergeTokenizeWithOffsets",
        "ConstrainedSequence", "MaxSpanningTree", "SentenceFragments", "RougeL", "SentencepieceOp",
        "SentencepieceTokenizeOp", "SentencepieceTokenizeWithOffsetsOp", "SentencepieceDetokenizeOp",
        "SentencepieceVocabSizeOp", "SentencepieceIdToStringOp", "SentencepieceStringToIdOp",
    ], "2.2"),
    **dict.fromkeys([
        "FastWordpieceTokenizeWithOffsets", "TFText>FastWordpieceDetokenize", "FastBertNormalize",
        "NormalizeUTF8WithOffsetsMap", "FindSourceOffsets", "TFText>WhitespaceTokenizeWithOffsetsV2",
        "TFText>NgramsStringJoin", "SentenceFragmentsV2", "TokenizerFromLogits",
    ], "2.12"),
    **dict.fromkeys(["TFText>RoundRobinTrim", "TFText>RoundRobinGenerateMasks"], "2.20"),
}

DEFAULT_SERVING_VERSION = "2.20"

# TF_DataType codes (tensorflow/c/tf_datatype.h) <-> numpy.
_TF_FLOAT, _TF_INT32, _TF_STRING, _TF_INT64, _TF_BOOL = 1, 3, 7, 9, 10
_NUMPY_OF_TF = {_TF_FLOAT: np.float32, _TF_INT32: np.int32, _TF_INT64: np.int64, _TF_BOOL: np.bool_,
                2: np.float64, 19: np.float16, 4: np.uint8}
_TF_OF_NUMPY = {np.dtype(v): k for k, v in _NUMPY_OF_TF.items()}
_TSTRING_SIZE = 24  # sizeof(TF_TString), tensorflow/tsl/platform/ctstring_internal.h


class ServabilityError(RuntimeError):
    """The export would not load or run in TF Serving; the message says what failed."""


def _tensorflow_dir():
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise ServabilityError("the tensorflow wheel is not installed in this Python environment")
    return list(spec.submodule_search_locations)[0]


def _protos():
    """The wheel's generated proto modules, without running tensorflow/__init__.py (see module doc)."""
    if "tensorflow" not in sys.modules:
        stub = types.ModuleType("tensorflow")
        stub.__path__ = [_tensorflow_dir()]
        sys.modules["tensorflow"] = stub
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2

    return types.SimpleNamespace(op_def=op_def_pb2, meta_graph=meta_graph_pb2, saved_model=saved_model_pb2)


def tf_text_kernel_libraries():
    """Paths of the installed tensorflow-text kernel libraries (`python/ops/_*.so` and friends)."""
    spec = importlib.util.find_spec("tensorflow_text")
    if spec is None or not spec.submodule_search_locations:
        raise ServabilityError("tensorflow-text is not installed in this Python environment")
    root = list(spec.submodule_search_locations)[0]
    return sorted(glob.glob(os.path.join(root, "python", "*", "_*.so")))


class _TFBuffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("length", ctypes.c_size_t), ("dealloc", ctypes.c_void_p)]


class _TFOutput(ctypes.Structure):
    _fields_ = [("oper", ctypes.c_void_p), ("index", ctypes.c_int)]


class TensorFlowCApi:
    """The installed wheel's TensorFlow C API, with the tensorflow-text kernels registered.

    `core_ops` is the set of ops registered before tf-text was loaded (TF core); `tf_text_ops` the ones the
    tf-text libraries added.
    """

    def __init__(self, load_tf_text=True):
        tf_dir = _tensorflow_dir()
        mode = ctypes.RTLD_GLOBAL
        ctypes.CDLL(os.path.join(tf_dir, "libtensorflow_framework.so.2"), mode=mode)
        lib = ctypes.CDLL(os.path.join(tf_dir, "libtensorflow_cc.so.2"), mode=mode)
        self.lib = lib
        vp, cp, sz, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int
        for name, res, args in [
            ("TF_NewStatus", vp, []), ("TF_DeleteStatus", None, [vp]), ("TF_GetCode", i, [vp]),
            ("TF_Message", cp, [vp]), ("TF_LoadLibrary", vp, [cp, vp]),
            ("TF_GetAllOpList", ctypes.POINTER(_TFBuffer), []),
            ("TF_GetOpList", _TFBuffer, [vp]), ("TF_NewBuffer", ctypes.POINTER(_TFBuffer), []),
            ("TF_DeleteBuffer", None, [vp]), ("TF_NewGraph", vp, []), ("TF_DeleteGraph", None, [vp]),
            ("TF_NewSessionOptions", vp, []), ("TF_DeleteSessionOptions", None, [vp]),
            ("TF_LoadSessionFromSavedModel", vp,
             [vp, vp, cp, ctypes.POINTER(cp), i, vp, ctypes.POINTER(_TFBuffer), vp]),
            ("TF_CloseSession", None, [vp, vp]), ("TF_DeleteSession", None, [vp, vp]),
            ("TF_GraphOperationByName", vp, [vp, cp]),
            ("TF_AllocateTensor", vp, [i, ctypes.POINTER(ctypes.c_int64), i, sz]),
            ("TF_DeleteTensor", None, [vp]), ("TF_TensorData", vp, [vp]), ("TF_TensorByteSize", sz, [vp]),
            ("TF_TensorType", i, [vp]), ("TF_NumDims", i, [vp]), ("TF_Dim", ctypes.c_int64, [vp, i]),
            ("TF_StringInit", None, [vp]), ("TF_StringCopy", None, [vp, cp, sz]),
            ("TF_StringGetDataPointer", vp, [vp]), ("TF_StringGetSize", sz, [vp]),
            ("TF_StringDealloc", None, [vp]),
            ("TF_SessionRun", None, [vp, vp, ctypes.POINTER(_TFOutput), ctypes.POINTER(vp), i,
                                     ctypes.POINTER(_TFOutput), ctypes.POINTER(vp), i, vp, i, vp, vp]),
        ]:
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.core_ops = self._all_ops()
        self.tf_text_ops = set()
        if load_tf_text:
            for path in tf_text_kernel_libraries():
                status = lib.TF_NewStatus()
                handle = lib.TF_LoadLibrary(path.encode(), status)
                self._raise_for(status, f"TF_LoadLibrary({path})")
                del handle  # registration is process-wide; the handle is never unloaded
            self.tf_text_ops = self._all_ops() - self.core_ops

    def _all_ops(self):
        buf = self.lib.TF_GetAllOpList()
        op_list = _protos().op_def.OpList()
        op_list.ParseFromString(ctypes.string_at(buf.contents.data, buf.contents.length))
        self.lib.TF_DeleteBuffer(buf)
        return {op.name for op in op_list.op}

    def _raise_for(self, status, what):
        code = self.lib.TF_GetCode(status)
        message = self.lib.TF_Message(status).decode(errors="replace")
        self.lib.TF_DeleteStatus(status)
        if code != 0:
            raise ServabilityError(f"{what} failed (TF error code {code}): {message}")

    def load_saved_model(self, export_dir, tags=("serve",)):
        return CApiSavedModel(self, export_dir, tags)

    def tensor_from_numpy(self, array):
        array = np.asarray(array)
        dims = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
        if array.dtype.kind in "SUO":
            flat = [x if isinstance(x, bytes) else str(x).encode() for x in array.reshape(-1)]
            tensor = self.lib.TF_AllocateTensor(_TF_STRING, dims, array.ndim, _TSTRING_SIZE * len(flat))
            base = self.lib.TF_TensorData(tensor)
            for k, value in enumerate(flat):
                self.lib.TF_StringInit(base + k * _TSTRING_SIZE)
                self.lib.TF_StringCopy(base + k * _TSTRING_SIZE, value, len(value))
            return tensor
        if array.dtype not in _TF_OF_NUMPY:
            raise ServabilityError(f"no TF dtype for numpy {array.dtype}")
        array = np.ascontiguousarray(array)
        tensor = self.lib.TF_AllocateTensor(_TF_OF_NUMPY[array.dtype], dims, array.ndim, array.nbytes)
        if array.nbytes:
            ctypes.memmove(self.lib.TF_TensorData(tensor), array.ctypes.data, array.nbytes)
        return tensor

    def tensor_to_numpy(self, tensor):
        shape = tuple(self.lib.TF_Dim(tensor, d) for d in range(self.lib.TF_NumDims(tensor)))
        dtype = self.lib.TF_TensorType(tensor)
        data = self.lib.TF_TensorData(tensor)
        if dtype == _TF_STRING:
            count = int(np.prod(shape))
            values = [ctypes.string_at(self.lib.TF_StringGetDataPointer(data + k * _TSTRING_SIZE),
                                       self.lib.TF_StringGetSize(data + k * _TSTRING_SIZE))
                      for k in range(count)]
            return np.array(values, dtype=object).reshape(shape)
        if dtype not in _NUMPY_OF_TF:
            raise ServabilityError(f"output of TF dtype code {dtype} is not supported by this check")
        nbytes = self.lib.TF_TensorByteSize(tensor)
        raw = ctypes.string_at(data, nbytes) if nbytes else b""
        return np.frombuffer(raw, dtype=_NUMPY_OF_TF[dtype]).reshape(shape).copy()


class CApiSavedModel:
    """A SavedModel loaded by `TF_LoadSessionFromSavedModel`; `run(signature, inputs)` feeds numpy arrays
    (bytes arrays for strings) by the signature's input keys and returns its outputs by key."""

    def __init__(self, api, export_dir, tags):
        self.api, lib = api, api.lib
        self.graph = lib.TF_NewGraph()
        options = lib.TF_NewSessionOptions()
        meta = lib.TF_NewBuffer()
        tag_array = (ctypes.c_char_p * len(tags))(*[t.encode() for t in tags])
        status = lib.TF_NewStatus()
        self.session = lib.TF_LoadSessionFromSavedModel(options, None, os.fspath(export_dir).encode(),
                                                        tag_array, len(tags), self.graph, meta, status)
        lib.TF_DeleteSessionOptions(options)
        api._raise_for(status, f"TF_LoadSessionFromSavedModel({export_dir})")
        self.meta_graph = _protos().meta_graph.MetaGraphDef()
        self.meta_graph.ParseFromString(ctypes.string_at(meta.contents.data, meta.contents.length))
        lib.TF_DeleteBuffer(meta)

    @property
    def signatures(self):
        return self.meta_graph.signature_def

    def _output(self, tensor_name):
        op_name, _, index = tensor_name.partition(":")
        oper = self.api.lib.TF_GraphOperationByName(self.graph, op_name.encode())
        if not oper:
            raise ServabilityError(f"tensor {tensor_name} of the signature is not in the loaded graph")
        return _TFOutput(oper, int(index or 0))

    def run(self, signature, inputs):
        if signature not in self.signatures:
            raise ServabilityError(f"no signature {signature!r}; the export has {sorted(self.signatures)}")
        sig = self.signatures[signature]
        if set(inputs) != set(sig.inputs):
            raise ServabilityError(f"signature {signature!r} takes inputs {sorted(sig.inputs)}, "
                                   f"got {sorted(inputs)}")
        lib = self.api.lib
        in_names, out_names = sorted(sig.inputs), sorted(sig.outputs)
        feeds = (_TFOutput * len(in_names))(*[self._output(sig.inputs[k].name) for k in in_names])
        values = (ctypes.c_void_p * len(in_names))(
            *[self.api.tensor_from_numpy(inputs[k]) for k in in_names])
        fetches = (_TFOutput * len(out_names))(*[self._output(sig.outputs[k].name) for k in out_names])
        results = (ctypes.c_void_p * len(out_names))()
        status = lib.TF_NewStatus()
        lib.TF_SessionRun(self.session, None, feeds, values, len(in_names), fetches, results,
                          len(out_names), None, 0, None, status)
        for tensor in values:
            lib.TF_DeleteTensor(tensor)
        self.api._raise_for(status, f"TF_SessionRun({signature!r})")
        outputs = {}
        for key, tensor in zip(out_names, results, strict=True):
            outputs[key] = self.api.tensor_to_numpy(tensor)
            lib.TF_DeleteTensor(tensor)
        return outputs

    def close(self):
        status = self.api.lib.TF_NewStatus()
        self.api.lib.TF_CloseSession(self.session, status)
        self.api.lib.TF_DeleteSession(self.session, status)
        self.api._raise_for(status, "TF_DeleteSession")
        self.api.lib.TF_DeleteGraph(self.graph)


def saved_model_ops(export_dir, tag="serve"):
    """Op names used by the `tag` MetaGraph of `export_dir/saved_model.pb`: its graph and every function of
    its library (where tf.function bodies, hence the signatures' ops, live)."""
    saved_model = _protos().saved_model.SavedModel()
    path = os.path.join(export_dir, "saved_model.pb")
    with open(path, "rb") as f:
        saved_model.ParseFromString(f.read())
    graphs = [m for m in saved_model.meta_graphs if tag in m.meta_info_def.tags]
    if not graphs:
        raise ServabilityError(f"{path} has no MetaGraph tagged {tag!r}")
    graph = graphs[0].graph_def
    ops = {node.op for node in graph.node}
    for function in graph.library.function:
        ops.update(node.op for node in function.node_def)
    # Calls of library functions appear as ops named after the function; they are not kernels.
    return ops - {f.signature.name for f in graph.library.function}


def _version_tuple(version):
    return tuple(int(p) for p in version.split("."))


def op_report(ops, core_ops, tf_text_ops, serving_version=DEFAULT_SERVING_VERSION):
    """Sorts the non-core `ops` of a graph: returns dict with `tf_text` ({op: first Serving version}),
    `missing` ({op: why}: ops that Serving `serving_version` would not have) and `min_serving_version`."""
    report = {"tf_text": {}, "missing": {}, "min_serving_version": "2.2"}
    for op in sorted(set(ops) - set(core_ops)):
        first = TF_TEXT_OP_FIRST_SERVING.get(op)
        if first is None:
            origin = "tensorflow-text" if op in tf_text_ops else "no library loaded here"
            report["missing"][op] = f"registered by {origin}, but in no TF Serving release known to this check"
            continue
        report["tf_text"][op] = first
        if _version_tuple(first) > _version_tuple(report["min_serving_version"]):
            report["min_serving_version"] = first
        if _version_tuple(first) > _version_tuple(serving_version):
            report["missing"][op] = f"first in TF Serving {first} (checked against {serving_version})"
    return report


def _read_tfrecords(path):
    """Record payloads of a TFRecord file (length, length-crc, data, data-crc), CRCs not verified."""
    records = []
    with open(path, "rb") as f:
        while header := f.read(12):
            if len(header) < 12:
                raise ServabilityError(f"{path}: truncated TFRecord header")
            (length,) = struct.unpack("<Q", header[:8])
            data = f.read(length)
            if len(data) != length or len(f.read(4)) != 4:
                raise ServabilityError(f"{path}: truncated TFRecord of {length} bytes")
            records.append(data)
    return records


def warmup_requests(export_dir):
    """The predict requests of `assets.extra/tf_serving_warmup_requests` as (signature, {key: array}), or
    None without `tensorflow-serving-api` (needed to parse PredictionLog)."""
    path = os.path.join(export_dir, "assets.extra", "tf_serving_warmup_requests")
    if not os.path.exists(path):
        return []
    _protos()
    try:
        from tensorflow_serving.apis import prediction_log_pb2
    except ImportError:
        return None
    requests = []
    for record in _read_tfrecords(path):
        log = prediction_log_pb2.PredictionLog()
        log.ParseFromString(record)
        request = log.predict_log.request
        inputs = {key: _tensor_proto_to_numpy(proto) for key, proto in request.inputs.items()}
        requests.append((request.model_spec.signature_name or "serving_default", inputs))
    return requests


def _tensor_proto_to_numpy(proto):
    shape = [d.size for d in proto.tensor_shape.dim]
    if proto.dtype == _TF_STRING:
        return np.array(list(proto.string_val), dtype=object).reshape(shape)
    if proto.dtype in _NUMPY_OF_TF and proto.tensor_content:
        return np.frombuffer(proto.tensor_content, dtype=_NUMPY_OF_TF[proto.dtype]).reshape(shape)
    if proto.dtype == _TF_INT32:
        return np.array(proto.int_val, dtype=np.int32).reshape(shape)
    raise ServabilityError(f"warmup tensor of TF dtype code {proto.dtype} is not supported by this check")


def check(export_dir, runs=(), atol=1e-4, serving_version=DEFAULT_SERVING_VERSION, api=None):
    """Loads `export_dir` as TF Serving does, runs its warmup requests, then each of `runs`.

    Args:
        export_dir: a version directory (`.../<version>` holding saved_model.pb).
        runs: list of (signature, inputs, expected): inputs {key: numpy array} (bytes/object arrays for
            strings); expected {output key: numpy array} or None; every output present in `expected`
            must match within `atol` (max abs difference) and in shape.
        serving_version: the TF Serving release whose tf-text ops the graph must stay within.
        api: a `TensorFlowCApi` to reuse across exports.

    Returns a dict: `ops` (op_report), `signatures`, `warmup_requests` (how many ran; None if they could
    not be parsed without tensorflow-serving-api), `runs`: per run {signature, max_abs_diff, outputs}.
    Raises `ServabilityError` on a load/run failure, an op Serving lacks, or a mismatch.
    """
    api = api or TensorFlowCApi()
    report = {"export_dir": os.fspath(export_dir), "runs": []}
    report["ops"] = op_report(saved_model_ops(export_dir), api.core_ops, api.tf_text_ops, serving_version)
    if report["ops"]["missing"]:
        raise ServabilityError(f"{export_dir}: TF Serving {serving_version} lacks ops "
                               f"{json.dumps(report['ops']['missing'], indent=1)}")
    model = api.load_saved_model(export_dir)
    try:
        report["signatures"] = sorted(k for k in model.signatures if k != "__saved_model_init_op")
        if "serving_default" not in model.signatures:
            raise ServabilityError(f"{export_dir} has no serving_default signature, which TF Serving "
                                   f"requires; it has {report['signatures']}")
        warmups = warmup_requests(export_dir)
        report["warmup_requests"] = None if warmups is None else len(warmups)
        for sig, request in warmups or ():
            model.run(sig, request)
        for signature, inputs, expected in runs:
            outputs = model.run(signature, inputs)
            diffs = {key: _compare(export_dir, signature, key, outputs, want, atol)
                     for key, want in (expected or {}).items()}
            report["runs"].append({"signature": signature, "max_abs_diff": diffs, "outputs": outputs})
    finally:
        model.close()
    return report


def _compare(export_dir, signature, key, outputs, want, atol):
    where = f"{export_dir} signature {signature!r}"
    if key not in outputs:
        raise ServabilityError(f"{where} has no output {key!r}; it has {sorted(outputs)}")
    got = outputs[key]
    if got.shape != np.shape(want):
        raise ServabilityError(f"{where}: output {key!r} has shape {got.shape}, expected {np.shape(want)}")
    diff = float(np.max(np.abs(got.astype(np.float64) - want))) if got.size else 0.0
    if not diff <= atol:
        raise ServabilityError(f"{where}: output {key!r} differs from the expected values by {diff:.3g} "
                               f"> atol {atol}")
    return diff


def _split_npz(path):
    """(inputs, expected) from an .npz written by `save_check_arrays`."""
    groups = {"input": {}, "expected": {}}
    with np.load(path, allow_pickle=False) as data:
        for name in data.files:
            group, key = name.split("/", 1)
            if key.endswith(":lengths"):
                continue
            if key.endswith(":bytes"):
                key = key[: -len(":bytes")]
                lengths = data[f"{group}/{key}:lengths"]
                raw, ends = data[name].tobytes(), np.cumsum(lengths.reshape(-1))
                values = [raw[end - n:end] for n, end in zip(lengths.reshape(-1), ends, strict=True)]
                groups[group][key] = np.array(values + [None], dtype=object)[:-1].reshape(lengths.shape)
            else:
                groups[group][key] = data[name]
    return groups["input"], groups["expected"] or None


def save_check_arrays(path, inputs, expected):
    """Writes the inputs and expected outputs of a check to `path` (.npz). String arrays (bytes/object)
    are stored as their concatenated bytes plus lengths: numpy's fixed-width bytes would drop trailing
    NULs, which serialized protos can end with."""
    arrays = {}
    for group, values in (("input", inputs), ("expected", expected or {})):
        for key, value in values.items():
            value = np.asarray(value)
            if value.dtype.kind in "OSU":
                flat = [v if isinstance(v, bytes) else str(v).encode() for v in value.reshape(-1)]
                arrays[f"{group}/{key}:bytes"] = np.frombuffer(b"".join(flat), np.uint8)
                arrays[f"{group}/{key}:lengths"] = np.array([len(v) for v in flat], np.int64).reshape(value.shape)
            else:
                arrays[f"{group}/{key}"] = value
    np.savez(path, **arrays)


def run_checks(jobs, atol=1e-4, serving_version=DEFAULT_SERVING_VERSION):
    """Checks several exports in this process. `jobs`: list of dicts with `export_dir` and optional `runs`,
    a list of {"signature": name, "arrays": .npz path from `save_check_arrays`}. Returns a JSON-able list
    of summaries (outputs as lists); a failing job carries `error` instead of raising."""
    api = TensorFlowCApi()
    summaries = []
    for job in jobs:
        runs = [(run.get("signature", "serving_default"), *_split_npz(run["arrays"]))
                for run in job.get("runs", ())]
        try:
            report = check(job["export_dir"], runs, atol=atol, serving_version=serving_version, api=api)
        except ServabilityError as e:
            summaries.append({"export_dir": os.fspath(job["export_dir"]), "error": str(e)})
            continue
        for run in report["runs"]:
            run["outputs"] = {k: v.tolist() for k, v in run["outputs"].items() if v.dtype != object}
        summaries.append(report)
    return summaries


def check_servable_subprocess(jobs, atol=1e-4, serving_version=DEFAULT_SERVING_VERSION, timeout=600):
    """Runs `run_checks(jobs)` in a fresh Python process (no keras, no TF Python), as TF Serving's C++
    loader sees the exports. Returns the list of summaries."""
    spec = json.dumps({"jobs": jobs, "atol": atol, "serving_version": serving_version}, default=os.fspath)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")}
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--json"], input=spec, text=True,
                          capture_output=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise ServabilityError(f"check process exited with {proc.returncode}:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__" and sys.argv[1:] == ["--json"]:
    _spec = json.loads(sys.stdin.read())
    print(json.dumps(run_checks(_spec["jobs"], _spec["atol"], _spec["serving_version"])))
