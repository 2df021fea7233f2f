"""Summarisation: fine-tune flan-t5-base on CNN/DailyMail with Seq2SeqTrainer, all speed settings on."""
import os

import evaluate
import nltk
import numpy as np
from datasets import load_dataset
from transformers import (
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
)

checkpoint = "google/flan-t5-base"
tokenizer = AutoTokenizer.from_pretrained(checkpoint)
model = AutoModelForSeq2SeqLM.from_pretrained(checkpoint)
rouge = evaluate.load("rouge")
nltk.download("punkt", quiet=True)

dataset = load_dataset("cnn_dailymail", "3.0.0")


def preprocess(examples):
    inputs = ["summarize: " + doc for doc in examples["article"]]
    model_inputs = tokenizer(inputs, max_length=1024, truncation=True)
    labels = tokenizer(text_target=examples["highlights"], max_length=128, truncation=True)
    model_inputs["labels"] = labels["input_ids"]
    return model_inputs


tokenized = dataset.map(preprocess, batched=True, num_proc=16, remove_columns=dataset["train"].column_names)


def compute_metrics(eval_pred):
    predictions, labels = eval_pred
    decoded_preds = tokenizer.batch_decode(predictions, skip_special_tokens=True)
    labels = np.where(labels != -100, labels, tokenizer.pad_token_id)
    decoded_labels = tokenizer.batch_decode(labels, skip_special_tokens=True)
    decoded_preds = ["\n".join(nltk.sent_tokenize(p.strip())) for p in decoded_preds]
    decoded_labels = ["\n".join(nltk.sent_tokenize(t.strip())) for t in decoded_labels]
    return rouge.compute(predictions=decoded_preds, references=decoded_labels, use_stemmer=True)


args = Seq2SeqTrainingArguments(
    output_dir=os.environ.get("OUT_DIR", "out/flan-t5-cnn"),
    per_device_train_batch_size=16,
    per_device_eval_batch_size=32,
    learning_rate=3e-4,
    num_train_epochs=3,
    eval_strategy="steps",
    eval_steps=2000,
    save_steps=2000,
    predict_with_generate=True,
    generation_max_length=128,
    bf16=True,
    tf32=True,
    torch_compile=True,
    dataloader_num_workers=16,
    dataloader_pin_memory=True,
    dataloader_persistent_workers=True,
    dataloader_prefetch_factor=4,
    report_to="tensorboard",
)

trainer = Seq2SeqTrainer(
    model=model,
    args=args,
    train_dataset=tokenized["train"],
    eval_dataset=tokenized["validation"].select(range(2000)),
    data_collator=DataCollatorForSeq2Seq(tokenizer, model=model),
    compute_metrics=compute_metrics,
)
trainer.train()
trainer.save_model()
