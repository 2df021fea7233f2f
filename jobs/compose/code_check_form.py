"""The "Check" page's training-program form: a cluster, and the program pasted (under a file
name) or uploaded as several .py files (and the YAML configs they read), with the entry point
among them. It reads what was sent
into {name: text}, refusing in words that name the file what the checker cannot read."""

from functools import cached_property

from django import forms

from guidance.engine.code_check import MAX_FILE_BYTES, MAX_FILES, CodeCheck, check_code
from guidance.facts import cluster_facts
from jobs.compose import program_files
from jobs.compose.check_form import cluster_field

PREFIX = "code"
SCRIPTS_CLUSTER = "The script's cluster"
# The Check page's one form, which the script's fields are in: the program's fields and button
# name it (HTML's form attribute), so that either button sends both boxes (check.html).
PAGE_FORM = "check-form"


# Browsers send an upload's name without its folder (and Django keeps only the last part), so
# models/__init__.py and data/__init__.py arrive with one name: say why, and what works instead.
_SAME_NAME = (
    "Two files are named {name}: uploaded files are taken as one folder, without their paths. "
    "Send each file once; for a package layout (models/__init__.py, data/__init__.py), paste "
    "a module in the box under its path, or use the API, which takes paths."
)


class MultipleFileInput(forms.FileInput):
    allow_multiple_selected = True


class ProgramFilesField(forms.FileField):
    """Any number of uploads, as they came: the form reads and judges them together."""

    widget = MultipleFileInput

    def clean(self, data, initial=None) -> list:
        if not data:
            return []
        return list(data) if isinstance(data, list | tuple) else [data]


class CodeCheckForm(forms.Form):
    # No `required` in the page: "The script's cluster" (empty) is a choice, filled in before
    # the form is checked; the form itself still requires a cluster.
    use_required_attribute = False
    # Empty: the script's, chosen beside it on the same page (check_views.with_script_cluster).
    cluster = cluster_field("Choose the cluster the program runs on.", SCRIPTS_CLUSTER)
    file_name = forms.CharField(
        label="File name",
        initial=program_files.DEFAULT_NAME,
        required=False,
        max_length=program_files.MAX_NAME_CHARS,
        help_text="As the project names it, its folder too (e.g. train.py or "
        "pipeline/loading.py): findings say file:line with it, and imports find it by it.",
    )
    program = forms.CharField(
        label="Training program",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 20, "class": "script", "spellcheck": "false"}),
        help_text="The Python file that trains (or evaluates) the model.",
    )
    uploads = ProgramFilesField(
        label="Or upload its files",
        required=False,
        widget=MultipleFileInput(
            attrs={"multiple": True, "accept": ".py,text/x-python,.yaml,.yml"}
        ),
        help_text=f"One or more .py files: the entry point and the modules it imports from the "
        f"project, and its YAML configs (a Hydra configs/ folder's files), at most "
        f"{MAX_FILES} files of {MAX_FILE_BYTES // 1000} kB each. They are taken "
        f"as one folder (browsers send no paths): for a package layout, paste a module above "
        f"under its path (e.g. pipeline/loading.py), or use the API, which takes paths.",
    )
    entry = forms.CharField(
        label="Entry point",
        required=False,
        max_length=program_files.MAX_NAME_CHARS,
        # The names of the files last sent, offered as choices (check_program.html).
        widget=forms.TextInput(attrs={"list": "code-entry-names"}),
        help_text="The file that is run (python train.py); empty: the pasted file, else the "
        "first one uploaded.",
    )

    names: tuple[str, ...] = ()  # the files sent, once read
    # What a person types, which the page shows again when the script is checked instead.
    TYPED = ("cluster", "file_name", "program", "entry")

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("label_suffix", "")
        kwargs.setdefault("prefix", PREFIX)
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.widget.attrs["form"] = PAGE_FORM

    def clean_program(self) -> str:
        return self.cleaned_data["program"].replace("\r\n", "\n")

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        files: dict[str, str] = {}
        pasted = data["program"]
        name = data["file_name"].strip() or program_files.DEFAULT_NAME
        if pasted.strip():
            files[name] = pasted
        self._uploaded = set()
        for upload in data["uploads"]:
            if upload.name in files:
                said = _SAME_NAME.format(name=upload.name)
                self.add_error("uploads", said)
                continue
            text = self._read(upload)
            if text is not None:
                files[upload.name] = text
                self._uploaded.add(upload.name)
        if self.errors:
            return data
        files = program_files.without_bom(files)
        for problem in program_files.problems(files):
            self._add_problem(problem)
        if problem := program_files.entry_problem(data["entry"].strip(), files):
            self.add_error("entry", problem.message)
        data["files"] = files
        self.names = tuple(files)
        return data

    def _read(self, upload) -> str | None:
        """The upload's text, or None with the reason said on the form."""
        if upload.size > MAX_FILE_BYTES:
            said = (
                f"{upload.name} is {program_files.kb(upload.size)}: the checker reads files of "
                f"at most {program_files.kb(MAX_FILE_BYTES)}."
            )
            self.add_error("uploads", said)
            return None
        if upload.size == 0:
            self.add_error("uploads", f"{upload.name} is empty: upload the program itself.")
            return None
        text = program_files.decode(upload.name, upload.read())
        if isinstance(text, program_files.Problem):
            self.add_error("uploads", text.message)
            return None
        return text.replace("\r\n", "\n")

    def _add_problem(self, problem: program_files.Problem) -> None:
        """On the field the file came from: the box, or the uploads."""
        if problem.code == "no_files":
            self.add_error("program", problem.message)
            return
        pasted = problem.file is not None and problem.file not in self._uploaded
        if pasted and problem.code in ("bad_file_name", "not_python_file"):
            self.add_error("file_name", problem.message)
        elif pasted:
            self.add_error("program", problem.message)
        else:
            self.add_error("uploads", problem.message)

    @cached_property
    def checked(self) -> CodeCheck | None:
        """What the checker found, once the form is valid; None when it could not read a file
        (said on the form)."""
        data = self.cleaned_data
        result = check_code(
            data["files"], cluster_facts(data["cluster"]), data["entry"].strip() or None
        )
        unreadable = program_files.unreadable(result)
        for problem in unreadable:
            self._add_problem(problem)
        return None if unreadable else result
