"""Every export writes assets.extra/batching_parameters.txt: a text-format tensorflow.serving
BatchingParameters (parsed here against that message's fields and types, session_bundle_config.proto) with
values TF Serving accepts; and assets.extra/model_server_flags.txt, the server's thread flags for its form."""

import os

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format, wrappers_pb2

from keras_bert.export import export_saved_model
from keras_bert.export.batching import (
    BATCHING_FILE,
    SERVER_FLAGS_FILE,
    batching_parameters,
    model_server_flags,
)
from keras_bert.models.encoder import BertEncoder

# tensorflow.serving.BatchingParameters as session_bundle_config.proto declares it: (name, number, type).
FIELDS = [("max_batch_size", 1, "Int64Value"), ("batch_timeout_micros", 2, "Int64Value"),
          ("max_enqueued_batches", 3, "Int64Value"), ("num_batch_threads", 4, "Int64Value"),
          ("thread_pool_name", 5, "StringValue"), ("allowed_batch_sizes", 6, "repeated int64"),
          ("pad_variable_length_inputs", 7, "bool")]


def _message_class():
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    proto = descriptor_pb2.FileDescriptorProto(name="session_bundle_config.proto",
                                               package="tensorflow.serving",
                                               dependency=["google/protobuf/wrappers.proto"], syntax="proto3")
    message = proto.message_type.add(name="BatchingParameters")
    kinds = descriptor_pb2.FieldDescriptorProto
    for name, number, kind in FIELDS:
        field = message.field.add(name=name, number=number, label=kinds.LABEL_OPTIONAL)
        if kind == "bool":
            field.type = kinds.TYPE_BOOL
        elif kind == "repeated int64":
            field.type, field.label = kinds.TYPE_INT64, kinds.LABEL_REPEATED
        else:
            field.type, field.type_name = kinds.TYPE_MESSAGE, f".google.protobuf.{kind}"
    pool.Add(proto)
    found = pool.FindMessageTypeByName("tensorflow.serving.BatchingParameters")
    return message_factory.GetMessageClass(found)


def _parsed(text):
    return text_format.Parse(text, _message_class()())


def server_flags(text):
    """{flag: int} of a model_server_flags.txt (comment lines skipped), as the server's command line gets
    them."""
    flags = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            name, value = line.split("=")
            flags[name] = int(value)
    return flags


def test_every_export_writes_batching_parameters_tf_serving_parses(tiny_config, tmp_path):
    version_dir = export_saved_model(BertEncoder(tiny_config), str(tmp_path), signature="token_ids",
                                     warmup=False)
    with open(os.path.join(version_dir, BATCHING_FILE), encoding="utf-8") as f:
        params = _parsed(f.read())
    assert params.max_batch_size.value == 32 and 0 < params.batch_timeout_micros.value <= 10_000
    assert params.num_batch_threads.value >= 1 and params.max_enqueued_batches.value >= 1
    assert not params.allowed_batch_sizes and not params.pad_variable_length_inputs  # any batch size
    with open(os.path.join(version_dir, SERVER_FLAGS_FILE), encoding="utf-8") as f:
        # a float32 export: TF's default pools (0: every core)
        assert server_flags(f.read()) == {"--tensorflow_intra_op_parallelism": 0,
                                          "--tensorflow_inter_op_parallelism": 0}


def test_small_int8_matmul_exports_ask_for_one_intra_op_thread():
    # TF runs their int8 matmuls on one thread anyway; the small ops then run inline (batching.py)
    minilm = [(384, 1152), (384, 384), (384, 1536), (1536, 384), (384, 384)]
    assert server_flags(model_server_flags("int8_matmul", minilm)) == {"--tensorflow_intra_op_parallelism": 1,
                                                                       "--tensorflow_inter_op_parallelism": 0}
    # BERT-base's feed-forward kernels run on both threads: one intra-op thread would take one away
    base = [(768, 2304), (768, 768), (768, 3072), (3072, 768), (768, 768)]
    assert server_flags(model_server_flags("int8_matmul", base))["--tensorflow_intra_op_parallelism"] == 0
    assert server_flags(model_server_flags("int8_weights", minilm)) == server_flags(model_server_flags(None))


def test_fixed_length_exports_allow_a_few_batch_sizes():
    params = _parsed(batching_parameters(fixed_length=True))
    sizes = list(params.allowed_batch_sizes)
    # TF Serving's rules: increasing, the last one max_batch_size.
    assert sizes == sorted(set(sizes)) and sizes[-1] == params.max_batch_size.value and sizes[0] == 1
