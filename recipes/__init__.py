"""The recipes: absl-flag scripts (flags -> library calls) and their shared modules (flags.py, logs.py,
common.py, run_dir.py); how the scripts run: docs/scripts.md."""

# keras_bert before any script's `import keras`: TensorFlow then loads inside keras_bert's quiet import (no
# C++ start-up lines); the rest of a run's quiet logs are set where it starts (`logs.run`).
import keras_bert  # noqa: F401
