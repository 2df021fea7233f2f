"""Continue pre-training a causal LM on a text corpus; every knob comes from the command line."""
import argparse

from datasets import load_dataset
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    DataCollatorForLanguageModeling,
    Trainer,
    TrainingArguments,
)


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="gpt2-medium")
    p.add_argument("--train-file", required=True)
    p.add_argument("--block-size", type=int, default=1024)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--grad-accum", type=int, default=4)
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--fp16", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--output", default="out/clm")
    return p.parse_args()


def group_texts(examples, block_size):
    concatenated = {k: sum(examples[k], []) for k in examples}
    total = (len(concatenated["input_ids"]) // block_size) * block_size
    return {k: [t[i : i + block_size] for i in range(0, total, block_size)] for k, t in concatenated.items()}


def main():
    args = parse()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(args.model)

    raw = load_dataset("text", data_files={"train": args.train_file})
    tokenized = raw.map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])
    lm_data = tokenized.map(lambda b: group_texts(b, args.block_size), batched=True)

    training_args = TrainingArguments(
        output_dir=args.output,
        per_device_train_batch_size=args.batch_size,
        gradient_accumulation_steps=args.grad_accum,
        num_train_epochs=args.epochs,
        learning_rate=args.lr,
        warmup_ratio=0.03,
        lr_scheduler_type="cosine",
        logging_steps=20,
        save_steps=1000,
        fp16=args.fp16,
        torch_compile=args.compile,
        dataloader_num_workers=args.num_workers,
        dataloader_persistent_workers=True,
        dataloader_prefetch_factor=4,
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=lm_data["train"],
        data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
    )
    trainer.train()
    trainer.save_model(args.output)


if __name__ == "__main__":
    main()
