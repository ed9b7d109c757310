"""The recipes: absl-flag scripts (flags -> library calls) and their shared modules (flags.py, logs.py,
common.py, run_dir.py). Importing the package first sets a script run's quiet logs before TensorFlow loads
(`keras_bert_commands.quiet_if_script`); how the scripts run: docs/scripts.md."""

import keras_bert_commands  # noqa: F401
