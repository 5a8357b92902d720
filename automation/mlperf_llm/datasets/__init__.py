"""Data sets for the llama2-70b benchmark: the processed OpenOrca pickle (download, processing,
schema check) and the small embedded data set used by the offline default and the tests."""
