"""Datasets: the registry, where files are found, and checksum-verified downloads.

`resolve(name, relpath)` returns a local path for one file of a registered dataset, looking in order at:
an explicit user path, `TRUSTMH_DATA_DIR`, the download cache, then a checksum-verified download.
"""

from trustmh.data.locate import resolve
from trustmh.data.registry import DATASETS, DataFile, Dataset, data_dir

__all__ = ["DATASETS", "Dataset", "DataFile", "resolve", "data_dir"]
