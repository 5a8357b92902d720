"""Models: the embedded SmolLM2 conversion, Hugging Face hub downloads, quantization."""
