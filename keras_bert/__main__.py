"""`python -m keras_bert COMMAND [flags]`: a recipe or export script by name (keras_bert/commands.py)."""

import sys

from keras_bert import commands

sys.exit(commands.main())
