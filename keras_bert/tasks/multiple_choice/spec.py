"""What the multiple choice (SWAG) task declares to shared code (`keras_bert.tasks.registry`): its
distinctive names (it serves with the options every model takes)."""

from keras_bert.models import options
from keras_bert.tasks.registry import TaskSpec

SPEC = TaskSpec(kind="multiple_choice",
                names=("BertMultipleChoice", "multiple_choice", "num_choices", "choice"),
                options=options.Options)
