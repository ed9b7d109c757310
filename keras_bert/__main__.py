"""`python -m keras_bert COMMAND [flags]`: a recipe or export script by name (keras_bert_commands.py)."""

import sys

import keras_bert_commands

sys.exit(keras_bert_commands.main())
