#!/usr/bin/env bash
# On a GPU host: serve the bundled SmolLM2 with vLLM and run bench/vllm_gpu.py against it.
#   bash bench/vllm_gpu.sh BUNDLE_DIR PROMPTS_JSON [OUT_DIR]
# BUNDLE_DIR holds wheels/ (vllm and what the host's Python lacks) and SmolLM2-135M-Instruct.Q4_1.gguf
# (the GGUF geomon's CPU engine serves). Its weights, dequantized, tokenizer and chat template become a
# Hugging Face checkpoint that vLLM serves with the flags geomon's production settings assume (deploy/vllm/).
# Never run in CI.
set -euo pipefail
bundle=$1 prompts=$2 out=${3:-/tmp/vllm-bench}
site=/tmp/vllm-site model=/tmp/smollm2-hf
mkdir -p "$out" "$site"
if [[ ! -f $site/.done ]]; then
  for wheel in "$bundle"/wheels/*.whl; do python3 -m zipfile -e "$wheel" "$site"; done
  for data in "$site"/*.data; do cp -r "$data"/*lib/. "$site"/ 2>/dev/null || true; rm -rf "$data"; done
  touch "$site/.done"
fi
# The host's own torch, transformers and CUDA libraries first; the bundle adds what is missing.
export PYTHONPATH=$site:$PWD HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1
gguf=$bundle/SmolLM2-135M-Instruct.Q4_1.gguf
if [[ ! -f $model/model.safetensors ]]; then
  # vLLM 0.24 reads no GGUF: the weights are dequantized into a Hugging Face checkpoint (bfloat16).
  python3 - "$gguf" "$model" <<'EOF'
import sys
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

gguf, dest = Path(sys.argv[1]), sys.argv[2]
model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name))
tensors = load_gguf_checkpoint(str(gguf), return_tensors=True, model_to_load=model)["tensors"]
model.load_state_dict({k: torch.as_tensor(v) for k, v in tensors.items()}, strict=False)  # lm_head is tied
model.to(torch.bfloat16).save_pretrained(dest)
AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(dest)
EOF
fi
python3 -m vllm.entrypoints.openai.api_server --model "$model" --served-model-name smollm2-135m-instruct \
  --host 127.0.0.1 --port 8000 --max-num-seqs 256 --enable-prefix-caching --max-model-len 2048 \
  --disable-uvicorn-access-log --gpu-memory-utilization 0.30 ${SERVE_ARGS:-} >"$out/vllm-serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
up() { python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8000/$1', timeout=5).read().decode())"; }
for _ in $(seq 1 300); do
  up v1/models >/dev/null 2>&1 && break
  kill -0 $server 2>/dev/null || { echo "vllm serve exited:"; tail -60 "$out/vllm-serve.log"; exit 1; }
  sleep 1
done
up v1/models >/dev/null 2>&1 || { echo "vllm serve not ready:"; tail -60 "$out/vllm-serve.log"; exit 1; }
up version
python3 bench/vllm_gpu.py measure --url http://127.0.0.1:8000/v1 --model smollm2-135m-instruct \
  --prompts "$prompts" --reference "$model" ${MEASURE_ARGS:-} | tee "$out/vllm_gpu.txt"
