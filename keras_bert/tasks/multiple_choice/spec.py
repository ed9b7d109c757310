"""What the multiple choice (SWAG) task declares to shared code (`keras_bert.tasks.registry`): its
distinctive names (it serves with the options every model takes) and its transformers head
(no KerasHub task preset)."""

from keras_bert.checkpoints.heads import HuggingFaceHead
from keras_bert.models import options
from keras_bert.tasks.task_spec import TaskSpec

SPEC = TaskSpec(kind="multiple_choice",
                names=("BertMultipleChoice", "multiple_choice", "num_choices", "choice"),
                options=options.Options,
                # transformers' state-dict prefix is "classifier" for this head too (a foreign key).
                huggingface=HuggingFaceHead(architecture="BertForMultipleChoice", layer="choice_score",
                                            prefix="classifier"))
