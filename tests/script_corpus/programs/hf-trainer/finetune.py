"""Fine-tune a BERT classifier on product reviews with the Hugging Face Trainer."""

import argparse

from datasets import load_from_disk
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    Trainer,
    TrainingArguments,
)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()

    tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
    reviews = load_from_disk(args.data).map(
        lambda batch: tokenizer(batch["text"], truncation=True, padding="max_length"),
        batched=True,
    )
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=5)
    settings = TrainingArguments(
        output_dir=args.output,
        per_device_train_batch_size=32,
        num_train_epochs=3,
        fp16=True,
        dataloader_num_workers=3,
        save_strategy="epoch",
    )
    trainer = Trainer(
        model=model,
        args=settings,
        train_dataset=reviews["train"],
        eval_dataset=reviews["test"],
    )
    trainer.train()


if __name__ == "__main__":
    main()
