# evaluator: bpp_online
# expect: fence: import of 'os' not allowed
# Attack (issue 13): write a forged result on an inherited descriptor, then exit at once.
import numpy as np


def priority(item, bins):
    import os

    for fd in range(3, 64):
        try:
            os.write(fd, b'{"status":"ok","error":null,"solutions":[[0]]}')
        except OSError:
            pass
    os._exit(0)
