"""benchmarks/ as a tool, read off its files without running a benchmark: no import cycles, no private name
used across modules, the shared helpers in the shared modules, one command-line style whose `--help` works;
and the traffic helpers serving_peers measures concurrent clients with, on a toy serving function."""

import ast
import importlib
import pathlib
import threading
import time

import pytest

from tests.test_import_cycles import cycles, import_graph, module_files

BENCHMARKS_ROOT = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
SHARED = {"benchmarks", "benchmarks.common", "benchmarks.inputs", "benchmarks.traffic"}
DRIVER = "benchmarks.run_all"  # reads the other scripts' reports to build one table
MODULES = module_files(BENCHMARKS_ROOT)
SCRIPTS = sorted(name for name, path in MODULES.items() if 'if __name__ == "__main__"' in path.read_text())


def _tree(module):
    return ast.parse(MODULES[module].read_text(), str(MODULES[module]))


def _functions(tree):
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_every_benchmark_module_is_found():
    assert {"benchmarks.run_all", "benchmarks.serving_peers", "benchmarks.serving_profile"} <= set(SCRIPTS)
    assert not SHARED - {"benchmarks"} & set(SCRIPTS)


def test_no_import_cycles():
    assert cycles(import_graph(MODULES)) == []


def test_scripts_import_only_the_shared_modules():
    graph = import_graph(MODULES)
    wrong = {module: sorted(graph[module] - SHARED) for module in SCRIPTS if module != DRIVER}
    assert {module: names for module, names in wrong.items() if names} == {}
    assert {module: sorted(graph[module]) for module in SHARED if graph.get(module, set()) - SHARED} == {}


def test_no_private_name_crosses_modules():
    found = []
    for module in MODULES:
        tree = _tree(module)
        aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmarks"):
                found += [f"{module}:{node.lineno} {a.name}" for a in node.names if a.name.startswith("_")]
                aliases |= {a.asname or a.name for a in node.names if f"{node.module}.{a.name}" in MODULES}
        found += [f"{module}:{node.lineno} {node.value.id}.{node.attr}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in aliases and node.attr.startswith("_")]
    assert found == []


def test_cpu_flags_come_from_the_library():
    readers = [module for module in MODULES if "cpu_flags" in _functions(_tree(module))]
    assert readers == []


def test_reported_cpu_flags_are_the_librarys(monkeypatch):
    from benchmarks import common
    from keras_bert import execution

    monkeypatch.setattr(execution, "cpu_flags", lambda: frozenset({"sse2", "amx_int8", "avx2", "amx_bf16"}))
    assert common.reported_cpu_flags() == "avx2 amx_bf16 amx_int8"


@pytest.mark.parametrize("module", SCRIPTS)
def test_script_has_the_one_command_line_style(module):
    tree = _tree(module)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not {"absl", "absl.app", "absl.flags", "argparse", "sys.argv"} & imported, module
    functions = _functions(tree)
    assert "command_line" in functions, f"{module}: no command_line() building its flags"
    main = functions.get("main")
    assert main is not None and [a.arg for a in main.args.args] == ["argv"], (
        f"{module}: main(argv=None) expected")
    first = ast.unparse(main.body[0])
    assert "command_line().parse_args(argv)" in first or first == "parser = command_line()", module


@pytest.mark.parametrize("module", SCRIPTS)
def test_script_help_works(module, capsys):
    script = importlib.import_module(module)
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--help"])
    assert exit_info.value.code == 0
    summary = script.__doc__.strip().splitlines()[0]
    out = capsys.readouterr().out
    assert out.startswith("usage: ") and summary in " ".join(out.split()), out[:300]


def test_comma_separated_flags():
    from benchmarks import common, serving_peers

    assert common.comma_separated(int)("1,4,16") == [1, 4, 16]
    args = serving_peers.command_line().parse_args(["--clients=2,3", "--impl=ort_int8"])
    assert (args.clients, args.impl, args.max_batch_size) == ([2, 3], "ort_int8", 32)
    with pytest.raises(SystemExit):
        serving_peers.command_line().parse_args(["--clients=1,x"])


@pytest.mark.parametrize("size", ["mini", "base"])
def test_the_step_floor_times_the_products_the_flop_count_counts(size):
    """--impl=floor times the products whose FLOPs MFU is computed from: their sum is exactly the model
    FLOPs of a step (a product missed or counted twice would move the floor)."""
    from benchmarks import common, pretrain_throughput

    batch_size = 32
    products = pretrain_throughput.step_matmuls(size, batch_size)
    flops = sum(count * 2 * m * k * n * (batch[0] if batch else 1)
                for count, batch, m, k, n in products.values())
    per_step = pretrain_throughput.train_flops_per_token(size) * batch_size * common.SEQ_LENGTH
    assert flops == per_step


def test_sequential_server_answers_one_request_at_a_time():
    from benchmarks import traffic

    running, most = [0], [0]
    lock = threading.Lock()

    def embed(batch):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.002)
        with lock:
            running[0] -= 1
        return [len(text) for text in batch]

    texts = [f"text {'x' * i}" for i in range(12)]
    figures = traffic.client_throughput(traffic.sequential(embed), texts, clients=4)
    assert most[0] == 1
    assert figures["texts_per_s"] > 0 and figures["p50_ms"] <= figures["p90_ms"]


def test_tf_batching_batches_concurrent_requests_and_keeps_each_answer():
    import tensorflow as tf

    from benchmarks import traffic

    def embed_batch(text):  # [b] strings -> [b, 2]: each text's length and the size of the batch it ran in
        size = tf.fill(tf.shape(text), tf.shape(text)[0])
        return tf.stack([tf.strings.length(text), size], axis=1)

    serve_one = traffic.tf_batching(tf, embed_batch, max_batch_size=8, timeout_ms=50.0)
    texts = ["a" * (i + 1) for i in range(16)]
    answers = {}
    barrier = threading.Barrier(8)

    def client(index):
        barrier.wait()
        for text in texts[index::8]:
            answers[text] = serve_one(text)

    threads = [threading.Thread(target=client, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {text: int(answer[0, 0]) for text, answer in answers.items()} == {t: len(t) for t in texts}
    assert max(int(answer[0, 1]) for answer in answers.values()) > 1
    assert max(int(answer[0, 1]) for answer in answers.values()) <= 8


def test_serving_peers_tables_from_rounds():
    from benchmarks import serving_peers

    def run(b1, b8, b32, sequential, batching=None):
        figures = {"b1_ms": b1, "b8_ms": b8, "b32_ms": b32, "load_before": 1.0, "load_after": 2.0,
                   "sequential_c4": {"texts_per_s": sequential, "p50_ms": 40.0, "p90_ms": 50.0}}
        if batching:
            figures["tf_batching_c4"] = {"texts_per_s": batching, "p50_ms": 30.0, "p90_ms": 35.0}
        return figures

    ours = serving_peers.best_of([run(12.0, 40.0, 352.0, 80.0, 150.0), run(10.0, 48.0, 320.0, 90.0, 140.0)])
    assert (ours["b1_ms"], ours["b8_ms"], ours["b32_ms"]) == (10.0, 40.0, 320.0)
    assert ours["tf_batching_c4"]["texts_per_s"] == 150.0 and ours["rounds_sequential_c4"] == [80.0, 90.0]
    assert serving_peers.best_cost_per_text(ours) == (5.0, 8)
    peer = serving_peers.best_of([run(4.0, 64.0, 640.0, 200.0)])
    results = {"ours": ours, "ort_fp32": peer, "cpu_flags": "avx2",
               "cosine": {"ours vs ort_fp32": (0.99, 0.999)}}
    text = serving_peers.markdown(results)
    assert "| best cost per text | 5.0 ms (b8) | 4.0 ms (b1) |" in text
    assert "| ours: SavedModel serving_default, tf_batching | 150.0 texts/s (p50 30 ms) |" in text
    assert "b1 2.50x, b8 0.62x, b32 0.50x, best cost per text 1.25x" in text
    assert "| ONNX Runtime fp32 + fast tokenizer, tf_batching" not in text


def test_serving_peers_cost_per_text_over_all_texts():
    from benchmarks import serving_peers

    seen = []

    def embed(batch):  # a text costs its length in ms: a pass costs the same at every batch size
        seen.append(len(batch))
        time.sleep(sum(len(text) for text in batch) / 1e3)

    texts = ["a" * 4, "b" * 2, "c" * 6]
    cost = serving_peers.all_texts_ms_per_text(embed, texts, batch_size=2, passes=1)
    assert seen == [2, 2, 1]  # a warm-up call, then every text once in successive batches
    assert 4.0 <= cost < 4.0 + 5.0
    fixed = {"b1_ms": 3.0, "b8_ms": 16.0, "b32_ms": 64.0, "load_before": 1.0, "load_after": 1.0}
    runs = [dict(fixed, all_b1_ms=6.0, all_b8_ms=2.5, all_b32_ms=2.0),
            dict(fixed, all_b1_ms=5.0, all_b8_ms=3.0, all_b32_ms=2.5)]
    best = serving_peers.best_of(runs)
    assert (best["all_b1_ms"], best["all_b32_ms"]) == (5.0, 2.0)
    assert serving_peers.best_all_texts_cost(best) == (2.0, 32)
    assert serving_peers.best_cost_per_text(best) == (2.0, 8)
    text = serving_peers.latency_table({"ours": dict(best, texts=320)})
    assert "| best cost per text, all 320 texts | 2.00 ms (b32) |" in text
