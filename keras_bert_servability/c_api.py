"""The installed wheel's TensorFlow C API through ctypes: the session-based SavedModel loader TF Serving
uses, with the tensorflow-text kernels registered by `TF_LoadLibrary` (as the model server links them in)."""

import ctypes
import glob
import importlib.util
import os

import numpy as np

from .errors import ServabilityError
from .protos import NUMPY_OF_TF, TF_OF_NUMPY, TF_STRING, op_names, signatures, tensorflow_dir

_TSTRING_SIZE = 24  # sizeof(TF_TString), tensorflow/tsl/platform/ctstring_internal.h


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
        tf_dir = tensorflow_dir()
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
        ops = op_names(ctypes.string_at(buf.contents.data, buf.contents.length))
        self.lib.TF_DeleteBuffer(buf)
        return ops

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
            tensor = self.lib.TF_AllocateTensor(TF_STRING, dims, array.ndim, _TSTRING_SIZE * len(flat))
            base = self.lib.TF_TensorData(tensor)
            for k, value in enumerate(flat):
                self.lib.TF_StringInit(base + k * _TSTRING_SIZE)
                self.lib.TF_StringCopy(base + k * _TSTRING_SIZE, value, len(value))
            return tensor
        if array.dtype not in TF_OF_NUMPY:
            raise ServabilityError(f"no TF dtype for numpy {array.dtype}")
        array = np.ascontiguousarray(array)
        tensor = self.lib.TF_AllocateTensor(TF_OF_NUMPY[array.dtype], dims, array.ndim, array.nbytes)
        if array.nbytes:
            ctypes.memmove(self.lib.TF_TensorData(tensor), array.ctypes.data, array.nbytes)
        return tensor

    def tensor_to_numpy(self, tensor):
        shape = tuple(self.lib.TF_Dim(tensor, d) for d in range(self.lib.TF_NumDims(tensor)))
        dtype = self.lib.TF_TensorType(tensor)
        data = self.lib.TF_TensorData(tensor)
        if dtype == TF_STRING:
            count = int(np.prod(shape))
            values = [ctypes.string_at(self.lib.TF_StringGetDataPointer(data + k * _TSTRING_SIZE),
                                       self.lib.TF_StringGetSize(data + k * _TSTRING_SIZE))
                      for k in range(count)]
            return np.array(values, dtype=object).reshape(shape)
        if dtype not in NUMPY_OF_TF:
            raise ServabilityError(f"output of TF dtype code {dtype} is not supported by this check")
        nbytes = self.lib.TF_TensorByteSize(tensor)
        raw = ctypes.string_at(data, nbytes) if nbytes else b""
        return np.frombuffer(raw, dtype=NUMPY_OF_TF[dtype]).reshape(shape).copy()


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
        # {name: {"inputs": {key: tensor name}, "outputs": {...}}} of the loaded MetaGraphDef
        self.signatures = signatures(ctypes.string_at(meta.contents.data, meta.contents.length))
        lib.TF_DeleteBuffer(meta)

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
        if set(inputs) != set(sig["inputs"]):
            raise ServabilityError(f"signature {signature!r} takes inputs {sorted(sig['inputs'])}, "
                                   f"got {sorted(inputs)}")
        lib = self.api.lib
        in_names, out_names = sorted(sig["inputs"]), sorted(sig["outputs"])
        feeds = (_TFOutput * len(in_names))(*[self._output(sig["inputs"][k]) for k in in_names])
        values = (ctypes.c_void_p * len(in_names))(
            *[self.api.tensor_from_numpy(inputs[k]) for k in in_names])
        fetches = (_TFOutput * len(out_names))(*[self._output(sig["outputs"][k]) for k in out_names])
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
