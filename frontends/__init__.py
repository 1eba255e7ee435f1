"""Frontend plugins: armnn_import_frontends.onnx and armnn_import_frontends.tflite (entry-point
group armnn_import.frontends; armnn_import.plugin.Frontend describes what each one declares)."""
