"""Trainer hooks that checkpoints cannot save, and a misspelled hook point (RLG005)."""

from torchrl.trainers import Trainer, TrainerHookBase


class RewardLogger(TrainerHookBase):
    """Logs rewards; has no state_dict/load_state_dict, so a checkpoint cannot save it."""

    def __init__(self):
        self.total = 0.0

    def __call__(self, batch):
        self.total += batch["next", "reward"].sum().item()
        return batch

    def register(self, trainer: Trainer, name: str = "reward_logger"):
        trainer.register_op("batch_process", self)
        trainer.register_module(name, self)


def add_hooks(trainer: Trainer, hook) -> None:
    trainer.register_op("post_optim_steps", hook)  # not a hook point: the trainer rejects it
