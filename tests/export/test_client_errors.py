"""`keras-bert client --protocol=grpc`'s first errors are one line naming the fix, as REST's are."""

import socket
import sys

from tests.recipes.conftest import run_in_process  # noqa: F401, F811 (the fixture)


def _free_port():
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        return free.getsockname()[1]  # closed once the block ends: nothing listens there


def test_grpc_without_a_server_is_one_line_naming_the_server(run_in_process):  # noqa: F811
    port = _free_port()
    status, stderr = run_in_process("export.client", "--protocol=grpc", "--host=127.0.0.1", f"--port={port}",
                                    "--model=m", "--text=hi", "--timeout=20")
    assert status == 1
    # was: a 38-line _InactiveRpcError traceback
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith(f"error: no model server answers at 127.0.0.1:{port} (gRPC UNAVAILABLE): "
                             "start TF Serving with its gRPC port there (tensorflow_model_server --port=...)")


def test_grpc_without_tensorflow_serving_api_is_one_line_naming_the_package(run_in_process, monkeypatch):  # noqa: F811
    for name in ("tensorflow_serving", "tensorflow_serving.apis"):
        monkeypatch.setitem(sys.modules, name, None)  # as where the package is not installed
    status, stderr = run_in_process("export.client", "--protocol=grpc", "--model=m", "--text=hi")
    assert status == 1
    assert stderr.count("\n") == 1, stderr  # was: a ModuleNotFoundError traceback
    assert stderr.startswith("error: --protocol=grpc needs the package tensorflow-serving-api"), stderr
    assert "pip install tensorflow-serving-api" in stderr
