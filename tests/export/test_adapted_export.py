"""Exports of adapted models, run by TF Serving's C++ loader: a LoRA classifier is served merged (equal to the
in-Python LoRA model); int8 and bfloat16 ones are served as their Python forms compute, close to float32."""

import numpy as np
import pytest

from keras_bert import BertClassifier, BertEncoder, execution
from keras_bert.export import export_saved_model, servability
from keras_bert.export.serving_form import serving_form
from tests.export.test_export import TEXTS, _expected, _run, preprocessor, tiny_config  # noqa: F401
from tests.export.test_serving_form import _classifier


def _lora_classifier():
    model = BertClassifier(BertEncoder(tiny_config()), 3)
    model.enable_lora(2)
    for variable in model.weights:  # adapters as if trained (B starts at 0, which would merge to nothing)
        if "lora_kernel_b" in variable.path:
            variable.assign(np.random.default_rng(0).normal(0, 0.2, variable.shape).astype("float32"))
    return model


@pytest.mark.slow
def test_lora_merged_int8_int8_matmul_static_int8_matmul_and_bfloat16_exports_run_in_the_c_api(
        preprocessor, tmp_path):  # noqa: F811
    """Every adapted export of this module checked in one C++ loader process."""
    texts = {"text": np.array(TEXTS, dtype=object)}
    lora = _lora_classifier()
    lora_want = _expected(lora, texts, preprocessor)
    fp32 = BertClassifier(BertEncoder(tiny_config()), 3)
    fp32_want = _expected(fp32, texts, preprocessor)
    int8 = serving_form(fp32, "int8_weights")  # int8_matmul: below
    int8_want = _expected(int8, texts, preprocessor)
    # int8 weights: logits within 2% of their range of float32's (measured here: 0.3%).
    scale = np.abs(fp32_want["logits"]).max()
    assert np.abs(int8_want["logits"] - fp32_want["logits"]).max() <= 0.02 * scale
    assert any(isinstance(v.dtype, str) and v.dtype == "int8" for v in int8.weights)
    assert not any(v.dtype == "int8" for v in fp32.weights)  # the caller's model is left float

    # LoRA merged and int8 weights: as served, equal to their Python forms (within 1e-5).
    exact_jobs = []
    for name, model, want in (("lora", lora, lora_want), ("int8", fp32, int8_want)):
        version_dir = export_saved_model(model, tmp_path / name, preprocessor, signature="text",
                                         quantize="int8_weights" if name == "int8" else None)
        exact_jobs.append({"export_dir": version_dir,
                           "runs": [_run(tmp_path, name, "serving_default", texts, want)]})

    # int8_matmul (dynamic and static ranges) and bfloat16: as served, against float32 in Python.
    model = _classifier()  # logits spread over +-1.4
    spread_want = _expected(model, texts, preprocessor)
    close_jobs = []
    forms = [("int8_matmul", "float32", None, 4e-2), (None, "bfloat16", None, 2e-2),
             ("int8_matmul", "float32", TEXTS * 4, 4e-2)]
    # int8_matmul runs only on a CPU with VNNI (elsewhere its export is refused: test_serving_form.py).
    forms = [form for form in forms if form[0] is None or execution.has_int8_matmul_hardware()]
    for quantize, dtype, calibration, _ in forms:
        version_dir = export_saved_model(model, tmp_path / dtype / str(quantize) / str(bool(calibration)),
                                         preprocessor, signature="text", quantize=quantize, dtype=dtype,
                                         calibration_texts=calibration)
        label = f"{quantize}-{dtype}-{bool(calibration)}"
        close_jobs.append({"export_dir": version_dir,
                           "runs": [_run(tmp_path, label, "serving_default", texts, spread_want)]})

    # One C++ loader process for all: the loosest tolerance (4e-2) there, each job's own asserted below.
    reports = {r["export_dir"]: r
               for r in servability.check_servable_subprocess(exact_jobs + close_jobs, atol=4e-2)}
    for job in exact_jobs:
        report = reports[job["export_dir"]]
        assert "error" not in report, report["error"]
        assert report["ops"]["missing"] == {}
        assert max(report["runs"][0]["max_abs_diff"].values()) <= 1e-5
    # Labels identical, logits within 4e-2 for int8 (measured 2.8e-2, 2% of their range; static ranges
    # 2.2e-2 in Python) and 2e-2 for bfloat16 (measured 4e-3).
    for job, (_, _, calibration, atol) in zip(close_jobs, forms, strict=True):
        report = reports[job["export_dir"]]
        assert "error" not in report, report["error"]
        assert report["ops"]["missing"] == {}
        # Static ranges run oneDNN's _QuantizedMatMul (the report says the model needs an oneDNN build).
        assert report["ops"]["onednn"] == ({"_QuantizedMatMul": "2.20"} if calibration else {})
        assert report["runs"][0]["max_abs_diff"]["label_id"] == 0
        assert report["runs"][0]["max_abs_diff"]["logits"] <= atol
