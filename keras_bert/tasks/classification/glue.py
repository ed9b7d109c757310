"""GLUE: the task table, readers for the official TSV directories and TFDS `glue/*`, and the submission
writer.

The TSV layouts are those written by the official GLUE download script (one directory per task):

  task    files                                   text a / text b (header names)   label
  CoLA    train/dev.tsv (no header, 4 fields),    field 4 (test: `sentence`)        field 2: 0/1
          test.tsv (`index sentence`)
  SST-2   train/dev.tsv, test.tsv                 sentence                          label: 0/1
  MRPC    train/dev.tsv, test.tsv                 #1 String / #2 String             Quality: 0/1
  STS-B   train/dev.tsv, test.tsv                 sentence1 / sentence2             score: float 0..5
  QQP     train/dev.tsv, test.tsv                 question1 / question2             is_duplicate: 0/1
  MNLI    train, dev_matched, dev_mismatched,     sentence1 / sentence2             gold_label
          test_matched, test_mismatched (.tsv)
  QNLI    train/dev.tsv, test.tsv                 question / sentence               label
  RTE     train/dev.tsv, test.tsv                 sentence1 / sentence2             label
  WNLI    train/dev.tsv, test.tsv                 sentence1 / sentence2             label: 0/1
  AX      diagnostic.tsv (test only)              sentence1 / sentence2             (none: MNLI labels)

Fields are tab-separated with no quoting (a `"` is text), as the original readers parse them. Rows whose field
count differs from the header's raise `DataFormatError` naming file:line, except in QQP, where the original
readers skip such rows (the distributed train file has a few): they are skipped and counted in a warning.

    task = get_glue_task("MNLI")
    train = read_glue_examples("mnli", "glue_data/MNLI", "train")
    label_ids = [task.label_list.index(e.label) for e in train]
    ...
    write_glue_predictions("mnli", "test_matched", test_examples, predicted_ids, output_dir)  # MNLI-m.tsv
"""

import csv
import dataclasses
import logging
import os

from keras_bert.data.formats import DataFormatError, check_new_id, header_index, read_rows
from keras_bert.tasks.classification.reader import (
    ClassificationExample,
    check_label,
    parse_regression_label,
)

_BINARY = ("0", "1")
_NLI = ("contradiction", "entailment", "neutral")
_ENTAILMENT = ("entailment", "not_entailment")


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """What a recipe needs to know about one GLUE task.

    Attributes:
      name: canonical lower-case name without punctuation ("sst2", "stsb", "mnli", ...).
      display_name: the GLUE spelling ("SST-2", "STS-B", ...).
      label_list: the label strings in class-id order, or None for the regression task STS-B. The order is
        that of the original BERT processors, so class ids match checkpoints fine-tuned with them.
      metric_names: keys of `keras_bert.tasks.classification.metrics.compute_metrics` for this task.
      split_files: split name -> file name inside the task directory.
      submission_files: test split name -> file name of the GLUE submission archive.
      text_a_column, text_b_column, label_column: header names (text_b_column None for single sentences).
    """

    name: str
    display_name: str
    label_list: tuple | None
    metric_names: tuple
    split_files: dict
    submission_files: dict
    text_a_column: str
    text_b_column: str | None
    label_column: str | None

    @property
    def is_regression(self):
        return self.label_list is None

    @property
    def num_classes(self):
        """Number of model outputs: 1 for regression."""
        return 1 if self.label_list is None else len(self.label_list)


_STANDARD_SPLITS = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}

GLUE_TASKS = {
    task.name: task
    for task in (
        GlueTask("cola", "CoLA", _BINARY, ("mcc",), _STANDARD_SPLITS, {"test": "CoLA.tsv"},
                 "sentence", None, None),
        GlueTask("sst2", "SST-2", _BINARY, ("accuracy",), _STANDARD_SPLITS, {"test": "SST-2.tsv"},
                 "sentence", None, "label"),
        GlueTask("mrpc", "MRPC", _BINARY, ("accuracy", "f1"), _STANDARD_SPLITS, {"test": "MRPC.tsv"},
                 "#1 String", "#2 String", "Quality"),
        GlueTask("stsb", "STS-B", None, ("pearson", "spearmanr"), _STANDARD_SPLITS, {"test": "STS-B.tsv"},
                 "sentence1", "sentence2", "score"),
        GlueTask("qqp", "QQP", _BINARY, ("accuracy", "f1"), _STANDARD_SPLITS, {"test": "QQP.tsv"},
                 "question1", "question2", "is_duplicate"),
        GlueTask("mnli", "MNLI", _NLI, ("accuracy",),
                 {"train": "train.tsv", "dev_matched": "dev_matched.tsv",
                  "dev_mismatched": "dev_mismatched.tsv", "test_matched": "test_matched.tsv",
                  "test_mismatched": "test_mismatched.tsv"},
                 {"test_matched": "MNLI-m.tsv", "test_mismatched": "MNLI-mm.tsv"},
                 "sentence1", "sentence2", "gold_label"),
        GlueTask("qnli", "QNLI", _ENTAILMENT, ("accuracy",), _STANDARD_SPLITS, {"test": "QNLI.tsv"},
                 "question", "sentence", "label"),
        GlueTask("rte", "RTE", _ENTAILMENT, ("accuracy",), _STANDARD_SPLITS, {"test": "RTE.tsv"},
                 "sentence1", "sentence2", "label"),
        GlueTask("wnli", "WNLI", _BINARY, ("accuracy",), _STANDARD_SPLITS, {"test": "WNLI.tsv"},
                 "sentence1", "sentence2", "label"),
        # The diagnostic set is predicted with an MNLI model and scored (by the GLUE server) with Matthews
        # correlation.
        GlueTask("ax", "AX", _NLI, ("mcc",), {"test": "diagnostic.tsv"}, {"test": "AX.tsv"},
                 "sentence1", "sentence2", None),
    )
}

# CoLA train/dev: no header; fields are source, label, original annotation, sentence.
_COLA_FIELDS, _COLA_LABEL_FIELD, _COLA_TEXT_FIELD = 4, 1, 3
# Tasks whose original readers skip rows with missing fields instead of failing.
_SKIP_MALFORMED_ROWS = ("qqp",)


def _canonical(name):
    return name.lower().replace("-", "").replace("_", "")


def get_glue_task(task_name):
    """Returns the `GlueTask` for a name in any common spelling ("SST-2", "sst2", "sst-2", "STS-B",
    "stsb")."""
    key = _canonical(task_name)
    if key not in GLUE_TASKS:
        known = ", ".join(task.display_name for task in GLUE_TASKS.values())
        raise ValueError(f"unknown GLUE task {task_name!r}; expected one of {known}")
    return GLUE_TASKS[key]


def glue_file_path(task_name, data_dir, split):
    """The path of `split` ("train", "dev", "test", or MNLI's "dev_matched", ...) in a task's directory."""
    task = get_glue_task(task_name)
    if split not in task.split_files:
        raise ValueError(f"GLUE task {task.display_name} has no split {split!r}; "
                         f"expected one of {list(task.split_files)}")
    return os.path.join(os.fspath(data_dir), task.split_files[split])


def _is_test_split(split):
    return split.startswith("test")


def read_glue_examples(task_name, data_dir, split):
    """Reads one split of a GLUE task from its official TSV directory.

    Args:
      task_name: a GLUE task name in any spelling ("CoLA", "sst-2", "MNLI", "ax", ...).
      data_dir: the task directory (`glue_data/MNLI`, ...) holding the files of the table above.
      split: "train", "dev", "test"; for MNLI "train", "dev_matched", "dev_mismatched", "test_matched",
        "test_mismatched"; for AX only "test".

    Returns:
      list of `ClassificationExample`: `label` is a string of `task.label_list` (float for STS-B) on train/dev
      splits and None on test splits; `index` is the file's `index`/`id` column (the row number where there
      is none); `guid` is `"<split>-<row>"`.

    Raises:
      FileNotFoundError: the split file is missing.
      DataFormatError: empty file, missing header column, wrong field count, unknown label, non-numeric score,
        an `index`/`id` value used twice.
    """
    task = get_glue_task(task_name)
    path = glue_file_path(task_name, data_dir, split)
    rows = read_rows(path, "\t", quoting=csv.QUOTE_NONE)
    if task.name == "cola" and not _is_test_split(split):
        return _read_cola_labeled(path, rows, split)

    header_line, header = rows[0]
    wanted = [task.text_a_column] + ([task.text_b_column] if task.text_b_column else [])
    has_labels = not _is_test_split(split) and task.label_column is not None
    if has_labels:
        wanted.append(task.label_column)
    columns = header_index(path, header, header_line, wanted)
    id_column = next((header.index(name) for name in ("index", "id") if name in header), None)
    if len(rows) == 1:
        raise DataFormatError(path, None, "file has a header but no examples")

    examples, skipped_lines, first_lines = [], [], {}
    for row_number, (line, fields) in enumerate(rows[1:]):
        if len(fields) != len(header):
            if task.name in _SKIP_MALFORMED_ROWS:
                skipped_lines.append(line)
                continue
            raise DataFormatError(path, line, f"expected {len(header)} tab-separated fields as in the "
                                              f"header, got {len(fields)}")
        label = None
        if has_labels:
            label = fields[columns[task.label_column]]
            if task.is_regression:
                label = parse_regression_label(path, line, label)
            else:
                check_label(path, line, label, task.label_list)
        index = row_number
        if id_column is not None:
            try:
                index = int(fields[id_column])
            except ValueError:
                raise DataFormatError(path, line, f"id column {header[id_column]!r} is not an integer: "
                                                  f"{fields[id_column]!r}") from None
            check_new_id(path, line, header[id_column], index, first_lines,
                         "GLUE submissions are keyed by it")
        examples.append(ClassificationExample(
            guid=f"{split}-{row_number}",
            text_a=fields[columns[task.text_a_column]],
            text_b=fields[columns[task.text_b_column]] if task.text_b_column else None,
            label=label,
            index=index,
        ))
    if skipped_lines:
        shown = ", ".join(map(str, skipped_lines[:10]))
        logging.warning("%s: skipped %d malformed rows (wrong field count) at lines %s%s", path,
                        len(skipped_lines), shown, " ..." if len(skipped_lines) > 10 else "")
    return examples


def _read_cola_labeled(path, rows, split):
    task = GLUE_TASKS["cola"]
    examples = []
    for row_number, (line, fields) in enumerate(rows):
        if len(fields) != _COLA_FIELDS:
            raise DataFormatError(path, line, f"expected {_COLA_FIELDS} tab-separated fields "
                                              f"(source, label, annotation, sentence), got {len(fields)}")
        label = fields[_COLA_LABEL_FIELD]
        check_label(path, line, label, task.label_list)
        examples.append(ClassificationExample(
            guid=f"{split}-{row_number}", text_a=fields[_COLA_TEXT_FIELD], label=label, index=row_number))
    return examples


def write_glue_predictions(task_name, split, examples, predictions, output_dir):
    """Writes a GLUE submission file (`index<TAB>prediction` with that header) and returns its path.

    Args:
      task_name: GLUE task name.
      split: a test split of the task ("test", or MNLI's "test_matched"/"test_mismatched").
      examples: the `ClassificationExample`s that were predicted (their `index` is written).
      predictions: one per example: a class id (int) or label string for classification, a float for STS-B.
      output_dir: directory to write to (created if missing). The file name is the one the GLUE server
        expects (CoLA.tsv, MNLI-m.tsv, AX.tsv, ...).

    Labels are written as the server expects them: 0/1 for CoLA, SST-2, MRPC, QQP, WNLI; label names for
    MNLI, AX, QNLI, RTE; the score with 3 decimals for STS-B.
    """
    task = get_glue_task(task_name)
    if split not in task.submission_files:
        raise ValueError(f"GLUE task {task.display_name}: split {split!r} has no submission file; "
                         f"expected one of {list(task.submission_files)}")
    if len(examples) != len(predictions):
        raise ValueError(f"{len(examples)} examples but {len(predictions)} predictions")
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, task.submission_files[split])
    with open(path, "w", encoding="utf-8") as f:
        f.write("index\tprediction\n")
        for example, prediction in zip(examples, predictions, strict=True):
            f.write(f"{example.index}\t{_format_prediction(task, prediction)}\n")
    return path


def _format_prediction(task, prediction):
    if task.is_regression:
        return f"{float(prediction):.3f}"
    if isinstance(prediction, str):
        if prediction not in task.label_list:
            raise ValueError(f"prediction {prediction!r} is not a {task.display_name} label "
                             f"{task.label_list}")
        return prediction
    class_id = int(prediction)
    if not 0 <= class_id < len(task.label_list):
        raise ValueError(f"class id {class_id} out of range for {task.display_name} "
                         f"({task.num_classes} classes)")
    return task.label_list[class_id]


# ------------------------------------------------------------------------------------------------------------
# TFDS `glue/<config>`
# ------------------------------------------------------------------------------------------------------------

# TFDS config -> (our task, text feature keys, TFDS ClassLabel names in TFDS id order, our label string for
# each TFDS id); the names are those of the TFDS glue builder, checked against the prepared data's info.
_TFDS_CONFIGS = {
    "cola": ("cola", ("sentence",), ("unacceptable", "acceptable"), _BINARY),
    "sst2": ("sst2", ("sentence",), ("negative", "positive"), _BINARY),
    "mrpc": ("mrpc", ("sentence1", "sentence2"), ("not_equivalent", "equivalent"), _BINARY),
    "qqp": ("qqp", ("question1", "question2"), ("not_duplicate", "duplicate"), _BINARY),
    "stsb": ("stsb", ("sentence1", "sentence2"), None, None),
    "qnli": ("qnli", ("question", "sentence"), _ENTAILMENT, _ENTAILMENT),
    "rte": ("rte", ("sentence1", "sentence2"), _ENTAILMENT, _ENTAILMENT),
    "wnli": ("wnli", ("sentence1", "sentence2"), ("not_entailment", "entailment"), _BINARY),
}
for _config in ("mnli", "mnli_matched", "mnli_mismatched", "ax"):
    _TFDS_CONFIGS[_config] = (_config.split("_")[0], ("premise", "hypothesis"),
                              ("entailment", "neutral", "contradiction"),
                              ("entailment", "neutral", "contradiction"))
_TFDS_SPLITS = {
    "train": "train", "validation": "dev", "test": "test",
    "validation_matched": "dev_matched", "validation_mismatched": "dev_mismatched",
    "test_matched": "test_matched", "test_mismatched": "test_mismatched",
}


def tfds_eval_splits(tfds_name):
    """(validation splits, test splits) of a TFDS glue config: MNLI's matched and mismatched ones, else
    ("validation",), ("test",)."""
    if tfds_name.partition("/")[2] == "mnli":
        return (tuple(s for s in _TFDS_SPLITS if s.startswith("validation_")),
                tuple(s for s in _TFDS_SPLITS if s.startswith("test_")))
    return ("validation",), ("test",)


def parse_tfds_name(tfds_name, tfds_split=None):
    """Maps a TFDS name (and split) to ours: ("glue/mnli_matched", "validation") -> ("mnli", "dev_matched").

    Returns `(task_name, split)`; split is None when `tfds_split` is None.
    """
    dataset, _, config = tfds_name.partition("/")
    if dataset != "glue" or config not in _TFDS_CONFIGS:
        raise ValueError(f"TFDS name {tfds_name!r}: expected glue/<config> with config one of "
                         f"{', '.join(_TFDS_CONFIGS)}")
    task_name = _TFDS_CONFIGS[config][0]
    if tfds_split is None:
        return task_name, None
    if tfds_split not in _TFDS_SPLITS:
        raise ValueError(f"TFDS split {tfds_split!r}: expected one of {', '.join(_TFDS_SPLITS)}")
    split = _TFDS_SPLITS[tfds_split]
    # mnli_matched / mnli_mismatched name their splits plain "validation"/"test".
    if config in ("mnli_matched", "mnli_mismatched") and split in ("dev", "test"):
        split = f"{split}_{config.split('_')[1]}"
    return task_name, split


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def examples_from_tfds(tfds_name, dataset, split="tfds"):
    """Converts a TFDS `glue/<config>` split to `ClassificationExample`s with the TSV readers' labels.

    Args:
      tfds_name: "glue/<config>", e.g. "glue/sst2", "glue/mnli", "glue/stsb".
      dataset: the split as returned by `tfds.load(tfds_name, split=...)` (a `tf.data.Dataset` of dicts of
        scalars: the config's text keys, `label` int64 (float32 for stsb; -1 on test splits), `idx` int32),
        or any iterable of such dicts with numpy/bytes/str values.
      split: prefix of the example guids.

    Returns:
      list of `ClassificationExample` whose labels are those of `read_glue_examples` ("0"/"1" for the
      two-class tasks, "entailment"/... for NLI; None for label -1), and `index` = TFDS `idx`.
    """
    task_name, _ = parse_tfds_name(tfds_name)
    _, text_keys, _, labels = _TFDS_CONFIGS[tfds_name.partition("/")[2]]
    if hasattr(dataset, "as_numpy_iterator"):
        dataset = dataset.as_numpy_iterator()
    examples = []
    for n, record in enumerate(dataset):
        missing = [key for key in (*text_keys, "label", "idx") if key not in record]
        if missing:
            raise ValueError(f"{tfds_name} record {n}: missing keys {missing}; has {sorted(record)}")
        if labels is None:
            label = float(record["label"])
        elif int(record["label"]) < 0:
            label = None
        elif int(record["label"]) < len(labels):
            label = labels[int(record["label"])]
        else:
            raise ValueError(f"{tfds_name} record {n}: label id {int(record['label'])} out of range for "
                             f"{labels}")
        examples.append(ClassificationExample(
            guid=f"{split}-{n}",
            text_a=_text(record[text_keys[0]]),
            text_b=_text(record[text_keys[1]]) if len(text_keys) > 1 else None,
            label=label,
            index=int(record["idx"]),
        ))
    return examples


def load_tfds_examples(tfds_name, tfds_split, data_dir=None):
    """Loads an already prepared TFDS glue split from `data_dir` (never downloads) as examples.

    Returns `(task_name, split, examples)` with the split renamed as in `parse_tfds_name`.
    Raises FileNotFoundError when the dataset is not prepared under `data_dir`.
    """
    import tensorflow_datasets as tfds  # imported here: importing TFDS costs seconds

    task_name, split = parse_tfds_name(tfds_name, tfds_split)
    builder = tfds.builder(tfds_name, data_dir=data_dir)
    if not builder.is_prepared():
        raise FileNotFoundError(f"TFDS dataset {tfds_name}: not prepared under the data_dir "
                                f"{builder.data_dir!r}; prepare it with `tfds build {tfds_name}` first")
    expected_names = _TFDS_CONFIGS[tfds_name.partition("/")[2]][2]
    names = getattr(builder.info.features["label"], "names", None)
    if expected_names is not None and tuple(names) != expected_names:
        raise ValueError(f"{tfds_name}: TFDS label names {names} differ from the expected {expected_names}")
    dataset = builder.as_dataset(split=tfds_split, shuffle_files=False)
    return task_name, split, examples_from_tfds(tfds_name, dataset, split=split)
