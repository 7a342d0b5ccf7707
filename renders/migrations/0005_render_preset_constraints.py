# The constraints of presets and of a render's files, apart from 0004: on PostgreSQL, rows
# updated in a migration cannot have their table altered in the same transaction.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('renders', '0004_render_preset_and_deliverables'),
    ]

    operations = [
        migrations.AddConstraint(
            model_name='render',
            constraint=models.UniqueConstraint(fields=('ad', 'combination', 'preset'), name='render_once_per_versions_preset'),
        ),
        migrations.AddConstraint(
            model_name='render',
            constraint=models.CheckConstraint(condition=models.Q(('preset__in', ['streaming', 'broadcast', 'atsc'])), name='render_preset_valid'),
        ),
        migrations.AddConstraint(
            model_name='render',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('status', 'done'), _negated=True), models.Q(models.Q(('audio', ''), _negated=True), models.Q(('wav', ''), _negated=True), models.Q(('mp3', ''), _negated=True), models.Q(('voices__isnull', True), models.Q(('voices_stem', ''), _negated=True), _connector='OR'), models.Q(('music__isnull', True), models.Q(('music_stem', ''), _negated=True), _connector='OR'), models.Q(('sfx__isnull', True), models.Q(('sfx_stem', ''), _negated=True), _connector='OR')), _connector='OR'), name='render_done_has_audio'),
        ),
        migrations.AddConstraint(
            model_name='render',
            constraint=models.CheckConstraint(condition=models.Q(('true_peak_dbtp__isnull', True), models.Q(('true_peak_dbtp__gte', -200), ('true_peak_dbtp__lte', 20)), _connector='OR'), name='render_true_peak_finite'),
        ),
    ]
