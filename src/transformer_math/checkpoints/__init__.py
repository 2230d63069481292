"""Load and save Llama-, GPT-2- and Meta-format checkpoints as ``nn.transformer.Transformer``
(``io.py``: files; ``adapters/``: one name table per family; ``info.py``: token ids)."""
