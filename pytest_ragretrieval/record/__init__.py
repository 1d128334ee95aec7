"""The run record: what one gate run found, as frozen types (`types.py`), and the one codec that writes
and reads the `--rag-json` results and the baseline (`codec.py`), older files through named upgrades."""
