import pytest


@pytest.fixture
def model_path():
    return "meta-llama/Llama-3.1-8B-Instruct"
