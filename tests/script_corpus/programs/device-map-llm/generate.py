import argparse
import json

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

parser = argparse.ArgumentParser()
parser.add_argument("--model")
parser.add_argument("--prompts")
parser.add_argument("--out")
args = parser.parse_args()

tokenizer = AutoTokenizer.from_pretrained(args.model)
model = AutoModelForCausalLM.from_pretrained(
    args.model, torch_dtype=torch.bfloat16, device_map="auto"
)
model.eval()

with open(args.prompts) as prompts, open(args.out, "w") as out:
    for line in prompts:
        prompt = json.loads(line)["prompt"]
        inputs = tokenizer(prompt, return_tensors="pt").to("cuda:0")
        with torch.inference_mode():
            tokens = model.generate(**inputs, max_new_tokens=256)
        answer = tokenizer.decode(tokens[0], skip_special_tokens=True)
        out.write(json.dumps({"prompt": prompt, "answer": answer}) + "\n")
