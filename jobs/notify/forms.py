from django import forms

from jobs.models import JobNotificationChoice, NotificationDefaults, NotificationSwitches


class DefaultsForm(forms.ModelForm):
    """The user's default, and the address their e-mails go to (kept on their account)."""

    email = forms.EmailField(
        label="E-mail address",
        required=False,
        help_text="Where notifications by e-mail go; empty: none are sent.",
    )

    class Meta:
        model = NotificationDefaults
        fields = ["email", *NotificationSwitches.FIELDS]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["email"].initial = self.instance.owner.email

    def save(self, commit: bool = True) -> NotificationDefaults:
        owner = self.instance.owner
        owner.email = self.cleaned_data["email"]
        owner.save(update_fields=["email"])
        return super().save(commit)


class JobChoiceForm(forms.ModelForm):
    class Meta:
        model = JobNotificationChoice
        fields = NotificationSwitches.FIELDS
