"""Load and save Llama- and GPT-2-format (Hugging Face layout) checkpoints; see ``io.py``."""
