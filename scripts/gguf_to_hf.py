"""Convert a GGUF chat model into the Hugging Face directory vLLM loads: config, tokenizer and bf16 safetensors.

Runs in vLLM's own venv (transformers + gguf + safetensors). `save_pretrained` refuses a model loaded from a
quantised GGUF, so the config (with `architectures`) and the weights are written here directly. The directory is
built next to OUT and renamed into place only when complete, so a present OUT is always whole.

    python scripts/gguf_to_hf.py MODEL.gguf OUT_DIR
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer


def convert(gguf: Path, out: Path) -> None:
    """Dequantise `gguf` to bf16 and write a loadable Hugging Face directory at `out`."""
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if not tokenizer.chat_template:
        raise SystemExit(f"{gguf.name} carries no chat template; vLLM's chat endpoint needs one")
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (work / "config.json").write_text(json.dumps(plain_config(model), indent=2) + "\n")
        model.generation_config.save_pretrained(work)
        tokenizer.save_pretrained(work)
        save_file(weights(model), str(work / "model.safetensors"), metadata={"format": "pt"})
        for path in [work, *work.iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def plain_config(model: torch.nn.Module) -> dict[str, object]:
    """The model's config as an unquantised checkpoint's: with `architectures`, without the GGUF loading hints."""
    config: dict[str, object] = model.config.to_dict()
    for key in ("quantization_config", "_model_name_or_path"):
        config.pop(key, None)  # vLLM would read `quant_method: gguf` and look for a GGUF file
    config["architectures"] = [type(model).__name__]
    return config


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict as separate contiguous tensors; a tied output head is left out (the config ties it)."""
    state = model.state_dict()
    if getattr(model.config, "tie_word_embeddings", False):
        state.pop("lm_head.weight", None)
    return {name: tensor.detach().contiguous() for name, tensor in state.items()}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    convert(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve())
