"""The openai-SDK client against a tiny fake OpenAI-compatible server on 127.0.0.1."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from llm_helpers import chat, prompt

from hifo.agents.llm.base import LLMError
from hifo.agents.llm.factory import make_client
from hifo.agents.llm.openai_client import OpenAIClient


class FakeServer(BaseHTTPRequestHandler):
    requests: list = []
    fail_next: list = []  # HTTP statuses to answer before behaving
    refuse_n = False  # behave like servers that reject n > 1

    def log_message(self, *args):
        pass

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeServer.requests.append((self.path, body))
        if FakeServer.fail_next:
            return self._send(FakeServer.fail_next.pop(0), {"error": {"message": "try later"}})
        n = body.get("n", 1)
        if n > 1 and FakeServer.refuse_n:
            return self._send(400, {"error": {"message": "n > 1 is not supported"}})
        seed = body.get("seed")
        usage = {"prompt_tokens": 7, "completion_tokens": 3 * n, "total_tokens": 7 + 3 * n}
        if self.path.endswith("/chat/completions"):
            choices = [{"index": i, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": f"chat {seed} {i}"}} for i in range(n)]
            obj = "chat.completion"
        else:
            choices = [{"index": i, "finish_reason": "length", "text": f"{body['prompt']}... {seed} {i}",
                        "logprobs": None} for i in range(n)]
            obj = "text_completion"
        self._send(200, {"id": "x", "object": obj, "created": 0, "model": body["model"], "choices": choices,
                         "usage": usage})


@pytest.fixture
def server():
    FakeServer.requests, FakeServer.fail_next, FakeServer.refuse_n = [], [], False
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeServer)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_prompt_goes_to_completions_and_chat_to_chat_completions(server):
    client = OpenAIClient("tiny", server)
    out = client.complete(prompt("def f("), n=2, seed=5, max_tokens=9, stop=["\n\n"])
    assert [c.text for c in out] == ["def f(... 5 0", "def f(... 5 1"]
    path, body = FakeServer.requests[-1]
    assert path == "/v1/completions" and body["prompt"] == "def f(" and body["max_tokens"] == 9
    assert body["stop"] == ["\n\n"] and body["n"] == 2
    out = client.complete(chat("hello"), seed=1)
    assert out[0].text == "chat 1 0" and out[0].finish_reason == "stop" and not out[0].cost_known
    path, body = FakeServer.requests[-1]
    assert path == "/v1/chat/completions" and [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "n" not in body


def test_token_counts_sum_to_the_server_totals(server):
    out = OpenAIClient("tiny", server).complete(chat("hi"), n=3)
    assert sum(c.prompt_tokens for c in out) == 7 and sum(c.completion_tokens for c in out) == 9


def test_n_is_made_one_by_one_when_the_server_refuses_it(server):
    FakeServer.refuse_n = True
    out = OpenAIClient("tiny", server).complete(chat("hi"), n=3, seed=10)
    assert [c.text for c in out] == ["chat 10 0", "chat 11 0", "chat 12 0"]  # sample i used seed+i
    assert [b.get("n", 1) for _, b in FakeServer.requests] == [3, 1, 1, 1]


def test_through_make_client_a_503_is_retried_and_a_401_is_not(server):
    client = make_client(f"openai/tiny@{server}")
    retry = client.inner  # budget -> retry -> backend
    waits = []
    retry._sleep = waits.append
    FakeServer.fail_next = [503, 500]
    assert client.complete(chat("hi"), seed=1)[0].text == "chat 1 0"
    assert len(FakeServer.requests) == 3 and client.usage.calls == 1 and len(waits) == 2
    FakeServer.fail_next = [401]
    with pytest.raises(LLMError, match="HTTP 401.*not retried"):
        client.complete(chat("hi"), seed=2)
    assert len(FakeServer.requests) == 4
