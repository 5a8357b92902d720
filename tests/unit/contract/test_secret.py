"""One rule for which env names and inputs are secrets: the cache, the record and the logs all ask it."""
import pytest

from cmcontract.secret import is_secret

SECRETS = ("HF_TOKEN", "CM_HF_TOKEN", "hf_token", "--hf_token", "HUGGING_FACE_HUB_TOKEN", "CM_R2_ACCESS_TOKEN",
           "VLLM_API_KEY", "CM_VLLM_API_KEY", "my_apikey", "DB_PASSWORD", "CM_CLIENT_SECRET", "AWS_SECRET_ACCESS_KEY",
           "CM_VLLM_SERVER_ENV_HF_TOKEN", "TOKEN", "CM_MAX_TOKENS_HF_TOKEN")
PLAIN = ("CM_DATASET_MAX_NEW_TOKENS", "max_new_tokens", "CM_MLPERF_MAX_TOKENS", "CM_VLLM_MAX_NUM_BATCHED_TOKENS",
         "TOKENS_PER_SAMPLE", "CM_DATASET_TOKENIZER_PATH", "tokenizer_path", "CM_MLPERF_SKIP_TOKENIZER_CHECK",
         "CM_DATASET_TOKENIZED", "CM_MLPERF_EOS_TOKEN_ID", "CM_MLPERF_VLLM_TOKEN_IDS", "token_ids",
         "CM_MODEL_PATH", "CM_KEY_FILE")


@pytest.mark.parametrize("name", SECRETS)
def test_tokens_passwords_and_keys_are_secrets(name):
    assert is_secret(name)


@pytest.mark.parametrize("name", PLAIN)
def test_counts_tokenizers_and_ids_are_not(name):
    assert not is_secret(name)
