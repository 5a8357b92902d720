"""Data sets: for llama2-70b the processed OpenOrca pickle (download, processing, schema check) and
the small embedded data set used by the offline default and the tests; for llama3.1-8b the
CNN/DailyMail cnn_eval.json layout (cnndm.py) and the embedded summarisation set (cnndm_embedded.py)."""
