"""GLUE MRPC fine-tuning with a plain loop driven by accelerate.

accelerate launch --num_processes 4 accelerate_glue.py
"""
import evaluate
import torch
from accelerate import Accelerator
from datasets import load_dataset
from torch.optim import AdamW
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

MODEL_NAME = "roberta-large"
EPOCHS = 3
LR = 2e-5
BATCH = 16


def main():
    accelerator = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=2)
    tokenizer = AutoTokenizer.from_pretrained(MODEL_NAME)
    datasets = load_dataset("glue", "mrpc")

    def tokenize_function(examples):
        return tokenizer(examples["sentence1"], examples["sentence2"], truncation=True, max_length=None)

    with accelerator.main_process_first():
        tokenized = datasets.map(tokenize_function, batched=True, remove_columns=["idx", "sentence1", "sentence2"])
    tokenized = tokenized.rename_column("label", "labels")

    def collate_fn(examples):
        return tokenizer.pad(examples, padding="longest", return_tensors="pt")

    train_dataloader = DataLoader(tokenized["train"], shuffle=True, collate_fn=collate_fn, batch_size=BATCH)
    eval_dataloader = DataLoader(tokenized["validation"], shuffle=False, collate_fn=collate_fn, batch_size=BATCH * 2)

    model = AutoModelForSequenceClassification.from_pretrained(MODEL_NAME, return_dict=True)
    optimizer = AdamW(params=model.parameters(), lr=LR)
    lr_scheduler = get_linear_schedule_with_warmup(
        optimizer=optimizer, num_warmup_steps=100, num_training_steps=len(train_dataloader) * EPOCHS
    )
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader, lr_scheduler
    )
    metric = evaluate.load("glue", "mrpc")

    for epoch in range(EPOCHS):
        model.train()
        for batch in train_dataloader:
            with accelerator.accumulate(model):
                outputs = model(**batch)
                accelerator.backward(outputs.loss)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()

        model.eval()
        for batch in eval_dataloader:
            with torch.no_grad():
                outputs = model(**batch)
            predictions = outputs.logits.argmax(dim=-1)
            predictions, references = accelerator.gather_for_metrics((predictions, batch["labels"]))
            metric.add_batch(predictions=predictions, references=references)
        accelerator.print(f"epoch {epoch}:", metric.compute())

    accelerator.wait_for_everyone()
    accelerator.unwrap_model(model).save_pretrained("out/mrpc", save_function=accelerator.save)


if __name__ == "__main__":
    main()
