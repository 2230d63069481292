"""Load and save Llama-, GPT-2- and Meta-format checkpoints as ``nn.transformer.Transformer``
(``io.py``: directories, validation, loading; ``files.py``: paths confined to the directory and
checked safetensors headers; ``adapters/``: one name table per family and ``adapters/keys.py``,
the typed config-value readers; ``info.py``: token ids; ``generation_config.py``: the decoding
defaults of ``generation_config.json``; ``pretrained.py``: ``PretrainedTransformer``, the loaded
model, whose forward returns ``.logits``/``.loss`` as transformers' models do)."""
