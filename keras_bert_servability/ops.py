"""Which ops a SavedModel uses, and which TF Serving release registers each non-core one."""

import os

from .errors import ServabilityError
from .protos import graph_ops, meta_graphs

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

# Internal oneDNN ops an export writes on purpose (the calibrated int8 Dense of serving_form: no public op
# keeps its int8 weights in oneDNN's blocked layout across calls), with the first TF Serving release claimed
# for each. Their kernels exist in x86-64 builds with oneDNN: TensorFlow's Linux wheels and every TF Serving
# build (its .bazelrc sets `build_with_onednn_v2`); not on other CPUs or GPU-only builds. Checked in
# TensorFlow 2.21; Serving 2.20 (TensorFlow 2.20) is the oldest release claimed.
ONEDNN_OP_FIRST_SERVING = {"_QuantizedMatMul": "2.20"}


def saved_model_ops(export_dir, tag="serve"):
    """Op names used by the `tag` MetaGraph of `export_dir/saved_model.pb`: its graph and every function of
    its library (where tf.function bodies, hence the signatures' ops, live)."""
    path = os.path.join(export_dir, "saved_model.pb")
    with open(path, "rb") as f:
        graphs = [meta for tags, meta in meta_graphs(f.read()) if tag in tags]
    if not graphs:
        raise ServabilityError(f"{path} has no MetaGraph tagged {tag!r}")
    return graph_ops(graphs[0])


def _version_tuple(version):
    return tuple(int(p) for p in version.split("."))


def op_report(ops, core_ops, tf_text_ops, serving_version=DEFAULT_SERVING_VERSION):
    """Sorts the non-core and internal (`_`-prefixed) `ops` of a graph: returns dict with `tf_text` ({op:
    first Serving version}), `onednn` (the same for the oneDNN ops of ONEDNN_OP_FIRST_SERVING: the model
    then needs an x86-64 server built with oneDNN), `missing` ({op: why}: ops that Serving `serving_version`
    would not have, or that no saved graph should hold) and `min_serving_version`."""
    report = {"tf_text": {}, "onednn": {}, "missing": {}, "min_serving_version": "2.2"}

    def needs(kind, op, first):
        report[kind][op] = first
        if _version_tuple(first) > _version_tuple(report["min_serving_version"]):
            report["min_serving_version"] = first
        if _version_tuple(first) > _version_tuple(serving_version):
            report["missing"][op] = f"first in TF Serving {first} (checked against {serving_version})"

    for op in sorted(op for op in ops if op.startswith("_")):
        if op in ONEDNN_OP_FIRST_SERVING and op in core_ops:
            needs("onednn", op, ONEDNN_OP_FIRST_SERVING[op])
        elif op in ONEDNN_OP_FIRST_SERVING:
            report["missing"][op] = "oneDNN op: this TensorFlow build (not x86-64 with oneDNN) lacks it"
        else:
            # Registered in core (so not caught below), but only as targets of TF's runtime graph
            # rewrites (oneDNN's _Mkl*, grappler's _Fused*): a saved graph holding one depends on that
            # build's rewrites.
            report["missing"][op] = ("internal op (a runtime rewrite's target); a saved graph must hold the "
                                     "public op")
    for op in sorted(set(ops) - set(core_ops) - set(report["missing"]) - set(report["onednn"])):
        first = TF_TEXT_OP_FIRST_SERVING.get(op)
        if first is None:
            origin = "tensorflow-text" if op in tf_text_ops else "no library loaded here"
            report["missing"][op] = (f"registered by {origin}, but in no TF Serving release known to this "
                                     "check")
            continue
        needs("tf_text", op, first)
    return report
