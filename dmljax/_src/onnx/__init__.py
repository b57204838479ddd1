"""ONNX import: the mapping table (table.py), the loader (loader.py), its one error."""
