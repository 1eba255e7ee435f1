"""Frontend plugins: frontends.onnx and frontends.tflite (entry-point group armnn_import.frontends)."""
