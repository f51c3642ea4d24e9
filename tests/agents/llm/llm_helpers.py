"""Message builders for the model-client tests."""


def prompt(text):
    return [{"role": "prompt", "content": text}]


def chat(text, system="You write Python."):
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]
