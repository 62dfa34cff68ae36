import { mount } from 'svelte';
import App from './App.svelte';
import { connect } from './transport/connect';
import './app.css';

mount(App, { target: document.getElementById('app')!, props: { transport: connect() } });
