"""Draft versions for tests that need drafts but not the tools that write them."""

from __future__ import annotations

from drafts.payloads import (
    MusicVersion,
    SfxPlacement,
    SfxVersion,
    SoundFxPrompt,
    Version,
    VoiceTrack,
    VoiceVersion,
)


def music(prompt: str = "calm piano", *, provider: str = "loudly", duration: int = 30):
    return MusicVersion(musicPrompt=prompt, musicProvider=provider, duration=duration)


def voices(*lines: str, voice_id: str = "1", voice_name: str = "Araya") -> VoiceVersion:
    tracks = [
        VoiceTrack(
            id=f"track-{i}",
            voiceId=voice_id,
            voiceName=voice_name,
            text=line,
            playAfter="start" if i == 0 else f"track-{i - 1}",
            overlap=0,
        )
        for i, line in enumerate(lines or ("Hello.",))
    ]
    return VoiceVersion(voiceTracks=tracks, estimatedDurationS=1.0 * len(tracks))


def sfx(*descriptions: str) -> SfxVersion:
    return SfxVersion(
        soundFxPrompts=[
            SoundFxPrompt(description=d, placement=SfxPlacement(type="end"), duration=3.0)
            for d in descriptions or ("soft whoosh",)
        ]
    )


def version_of(kind: str) -> Version:
    """A version of ``kind`` with its defaults."""
    return {"voices": voices, "music": music, "sfx": sfx}[kind]()
