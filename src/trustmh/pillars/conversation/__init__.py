"""The Conversation pillar. See docs/pillars/conversation.md."""

from __future__ import annotations

from trustmh.pillars.conversation.ai_disclosure import AIDisclosure
from trustmh.pillars.conversation.credentials import Credentials
from trustmh.pillars.conversation.crisis_referral import CrisisReferral
from trustmh.pillars.conversation.delusion import Delusion
from trustmh.pillars.conversation.gradual_disclosure import GradualDisclosure
from trustmh.pillars.conversation.harm_to_others import HarmToOthers
from trustmh.pillars.conversation.mindeval_reference import REFERENCE as MINDEVAL_REFERENCE
from trustmh.pillars.conversation.minors import Minors
from trustmh.pillars.conversation.multiturn_jailbreak import MultiturnJailbreak
from trustmh.pillars.conversation.simulated_patient import SimulatedPatient

TITLE = "Conversation"
SUITE = "trustmh"
POSITION = 9  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = False
# the pillar's sub-tasks, in report order
SUBTASKS = (GradualDisclosure, Delusion, MultiturnJailbreak, SimulatedPatient, AIDisclosure, Credentials, Minors,
            CrisisReferral, HarmToOthers)
# the reference sets its judges are certified on (`trustmh judge certify --reference NAME`)
REFERENCES = (MINDEVAL_REFERENCE,)
