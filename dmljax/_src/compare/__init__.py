"""``dmljax compare``: another runtime's DirectML results against dmljax, within each
operator's declared budget (DxDispatch result files, ONNX node dumps)."""
