"""Serving traffic: N concurrent clients, each sending one text per request and waiting for its answer
before sending the next (closed loop), against a server that answers requests one at a time or batches
the concurrent ones.

  sequential(embed)             a single-worker server: a lock serializes the requests, each one is
                                `embed([text])` alone;
  tf_batching(tf, embed_batch)  TensorFlow's own batching (the BatchFunction op TF Serving's
                                `--enable_batching` schedules): concurrent requests are concatenated into
                                one batch of up to `max_batch_size` texts, or what arrived within
                                `timeout_ms` of the first, and split back after one call.
`client_throughput` runs the clients on threads (TF, ONNX Runtime and torch release the GIL while they
compute) and reports texts per second and the latency clients saw.
"""

import statistics
import threading
import time

CLIENTS = (1, 4, 16)


def sequential(embed):
    """A request function (one text -> its answer) calling `embed([text])` one request at a time."""
    lock = threading.Lock()

    def serve_one(text):
        with lock:
            return embed([text])

    return serve_one


def tf_batching(tf, embed_batch, max_batch_size=32, timeout_ms=2.0):
    """A request function batching concurrent requests with TF's BatchFunction op: `embed_batch` (a string
    tensor [b] -> a tensor [b, ...]) runs once per batch of up to `max_batch_size` texts, or of those that
    arrived within `timeout_ms` of the batch's first; no padding to fixed batch sizes."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(text):
        batched = tf.compat.v1.nondifferentiable_batch_function(
            num_batch_threads=1, max_batch_size=max_batch_size, batch_timeout_micros=int(1e3 * timeout_ms),
            max_enqueued_batches=1000)(embed_batch)
        return batched(text)

    return lambda text: serve(tf.constant([text])).numpy()


def client_throughput(serve_one, texts, clients):
    """{texts_per_s, p50_ms, p90_ms} of `clients` threads sending `texts` between them (client i sends
    texts[i::clients] in order, one per request), timed from the first request to the last answer. The same
    traffic runs once untimed first: the steady state, not the first sight of each batch shape, for which
    oneDNN builds its kernels (docs/serving_measurements.md, "One intra-op thread for int8 exports")."""
    _run_clients(serve_one, texts, clients)
    latencies, seconds = _run_clients(serve_one, texts, clients)
    ordered = sorted(latencies)
    return {"texts_per_s": round(len(texts) / seconds, 2),
            "p50_ms": round(1e3 * statistics.median(ordered), 2),
            "p90_ms": round(1e3 * ordered[int(0.9 * (len(ordered) - 1))], 2)}


def _run_clients(serve_one, texts, clients):
    """(each request's seconds, the wall seconds of all) of `clients` threads sharing `texts`."""
    latencies, errors = [], []

    def client(index):
        try:
            for text in texts[index::clients]:
                start = time.perf_counter()
                serve_one(text)
                latencies.append(time.perf_counter() - start)
        except Exception as error:  # noqa: BLE001 - re-raised in the caller's thread below
            errors.append(error)

    threads = [threading.Thread(target=client, args=(index,)) for index in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    if errors:
        raise errors[0]
    return latencies, seconds
