"""A training script in the style of public research code (module globals, argparse, f-strings).

Usage: python train.py --key=value ... (every --key=value overrides a global)
"""

import argparse
import os
import sys
from typing import Any, Optional

api_key = os.environ["OPENAI_API_KEY"]
HF_TOKEN = "HF_TOKEN"  # the variable's name, read below
token = os.environ.get(HF_TOKEN)
_FLOAT_TAG_KEY = "__float__"
port_key = "MASTER_PORT"


def override(arg: str, key: Optional[str] = None, session: Any = None) -> None:
    """Apply one override.

    :param key: The associated key in the parent.
    :param session: A session: value pairs are read from it.
    """
    if not arg.startswith("--"):
        raise ValueError(f"not --key=value: {arg}")
    key, val = arg[2:].split("=", 1)
    if key == "":
        raise ValueError(f"key={key!r} is empty; signature: cannot trace the override")
    print(f"Overriding: {key} = {val}")
    globals()[key] = val


def lookup(cache: dict, key: Any, private: bool = False) -> Any:
    cache_key = (key, private)
    state = {key: cache[key] for key in sorted(cache)}
    token = state.get("pad_token")
    return cache.get(cache_key, token)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api_key", type=str, default=None, help="or set $OPENAI_API_KEY")
    parser.add_argument("--token", type=str, default=os.environ.get("HF_TOKEN"))
    args = parser.parse_args()
    auth = args.token or token
    key = "fp8_" + str(auth is None)
    print(f"see `accelerate launch --aws_access_key_id XXX --aws_secret_access_key YYY`")
    print("a basic lower-diagonal causal mask; Bearer tokens are read from the environment.")
    print(f"registered to DispatchKey::{key} via a pre-existing kernel")
    headers = {"Authorization": f"Bearer {auth}", "client_secret": str}
    for arg in sys.argv[1:]:
        override(arg)
    print(headers, lookup({}, key))


if __name__ == "__main__":
    main()
