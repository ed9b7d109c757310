"""The `keras-bert` console script (setup.py): keras_bert/commands.py loaded by its path, without running
keras_bert's __init__ (it imports TensorFlow), so `keras-bert --help` is instant and a command's preamble
runs before TensorFlow loads."""

import importlib.util
import os
import sys


def main():
    package_dir = importlib.util.find_spec("keras_bert").submodule_search_locations[0]
    path = os.path.join(package_dir, "commands.py")
    spec = importlib.util.spec_from_file_location("_keras_bert_commands", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.exit(module.main())
