from django import forms

from jobs.models import JobNotificationChoice, NotificationDefaults, NotificationSwitches


class DefaultsForm(forms.ModelForm):
    class Meta:
        model = NotificationDefaults
        fields = NotificationSwitches.FIELDS


class JobChoiceForm(forms.ModelForm):
    class Meta:
        model = JobNotificationChoice
        fields = NotificationSwitches.FIELDS
