"""keras_bert: BERT (Devlin et al., 2018) as Keras 3 layers and models on TensorFlow.

Models take and return dicts with the TF Hub BERT names: `input_word_ids`, `input_mask`, `input_type_ids`
-> `sequence_output`, `pooled_output`, `encoder_outputs`.
"""

import importlib

from keras_bert import native_logs

# Imported in `native_logs.quiet`: TensorFlow's C++ start-up lines only with KERAS_BERT_VERBOSE=1 (its
# listing of devices where no CUDA driver loads too, whose `failed call to cuInit` line would come later).
with native_logs.quiet():
    # text, training for their registrations too: .keras files of fine-tuned models name our optimizer,
    # schedule and text layers, which must be registered before keras.models.load_model reads them.
    from keras_bert import text, training
    from keras_bert.checkpoints import (
        find_vocab_file,
        save_google_checkpoint,
        save_huggingface,
        save_keras_hub,
        save_pretrained,
    )
    from keras_bert.config import PRESETS, BertConfig
    from keras_bert.models.encoder import BertEncoder, load_encoder, load_pretrained_model
    from keras_bert.tasks import registry  # noqa: F401  (the task folders: their heads, Options)
    from keras_bert.tasks.classification.model import BertClassifier
    from keras_bert.tasks.multiple_choice.model import BertMultipleChoice
    from keras_bert.tasks.ner.model import BertTokenClassifier
    from keras_bert.tasks.pretraining.model import BertPretrainer, load_pretrainer
    from keras_bert.tasks.squad.model import BertSpanLabeler
    native_logs.list_devices_without_cuda()

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "BertClassifier",
    "BertConfig",
    "BertEncoder",
    "BertMultipleChoice",
    "BertPretrainer",
    "BertSpanLabeler",
    "BertTokenClassifier",
    "find_vocab_file",
    "load_encoder",
    "load_pretrained_model",
    "load_pretrainer",
    "save_google_checkpoint",
    "save_huggingface",
    "save_keras_hub",
    "save_pretrained",
    "text",
    "training",
]


def __getattr__(name):
    """`keras_bert.export` (SavedModel, TF Hub and LiteRT export) imported on first use (PEP 562): its
    modules cost nothing to a program that does not export."""
    if name == "export":
        return importlib.import_module("keras_bert.export")
    raise AttributeError(f"module 'keras_bert' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), "export"})
